// fork/exec, timed waits and RSS; see child_process.hpp.
#include "tools/loadgen/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace ds4::load {

Child spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                  bool capture_stdout, const std::string& stderr_path) {
  if (argv.empty()) throw std::invalid_argument("spawn_child: empty command");
  int out[2] = {-1, -1};
  if (capture_stdout && pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe for " + argv[0] + ": " + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork for " + argv[0] + ": " + std::strerror(errno));
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    if (capture_stdout) dup2(out[1], 1);
    if (!stderr_path.empty()) {
      const int e = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (e >= 0) dup2(e, 2);
    }
    setpgid(0, 0);  // its own process group, so a kill reaches the helpers a script starts
    execvp(args[0], args.data());
    dprintf(2, "ds4d-load: exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  Child c;
  c.pid = pid;
  if (capture_stdout) {
    close(out[1]);
    c.stdout_fd = out[0];
  }
  return c;
}

std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ResidentMemory read_resident_memory(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  ResidentMemory out;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) out.rss_kib = std::strtoull(line.c_str() + 6, nullptr, 10);
    if (line.rfind("RssAnon:", 0) == 0) out.anon_kib = std::strtoull(line.c_str() + 8, nullptr, 10);
  }
  return out;
}

}  // namespace ds4::load
