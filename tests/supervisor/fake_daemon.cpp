// A stand-in for ds4d in the supervisor tests: it reports what the supervisor gave it and then
// behaves as FAKE_DAEMON_MODE says, so launch, relay, restart and stop can be checked without
// loading a model.
//   FAKE_DAEMON_DIR   directory for its reports: "pid" (latest pid), "args", "starts" (one line
//                     per start), "notify_socket", "watchdog_pid", "sigterm" (written on SIGTERM)
//   FAKE_DAEMON_MODE  "serve" (default): READY=1 then wait for SIGTERM, exit 0;
//                     "crash-once": exit 3 at the first start, serve at later starts;
//                     "config-error": exit 78.
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {
volatile sig_atomic_t g_term = 0;
void on_term(int) { g_term = 1; }

void write(const std::string& dir, const std::string& name, const std::string& text, bool append = false) {
  std::ofstream o(dir + "/" + name, append ? std::ios::app : std::ios::trunc);
  o << text;
}
}  // namespace

int main(int argc, char** argv) {
  const char* d = std::getenv("FAKE_DAEMON_DIR");
  const char* m = std::getenv("FAKE_DAEMON_MODE");
  if (d == nullptr) return 2;
  const std::string dir = d, mode = m ? m : "serve";
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(argv[i]) + "\n";
  write(dir, "args", args);
  write(dir, "pid", std::to_string(getpid()));
  const char* ns = std::getenv("NOTIFY_SOCKET");
  write(dir, "notify_socket", ns ? ns : "");
  const char* wp = std::getenv("WATCHDOG_PID");
  write(dir, "watchdog_pid", wp ? wp : "");
  std::ifstream starts_in(dir + "/starts");
  int starts = 0;
  for (std::string l; std::getline(starts_in, l);) ++starts;
  write(dir, "starts", "start\n", true);

  if (mode == "config-error") return 78;
  if (mode == "crash-once" && starts == 0) return 3;
  std::signal(SIGTERM, on_term);
  sd_notify(0, "STATUS=Loading weights 50%\nEXTEND_TIMEOUT_USEC=30000000");
  sd_notify(0, "READY=1\nSTATUS=Serving fake\nMAINPID=1");
  while (!g_term) pause();
  sd_notify(0, "STOPPING=1");
  write(dir, "sigterm", "1");
  return 0;
}
