// ds4d-supervisor end to end, without root and without touching the host: a fake sysroot
// (meminfo, swaps, earlyoom files), the tiny DS4 GGUF for the plan, and a fake daemon. The test
// plays systemd: it owns the NOTIFY_SOCKET the supervisor reports to.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "host/oom_adjust.hpp"
#include "supervisor/notify_relay.hpp"
#include "tests/support/test_sysroot.hpp"

namespace ds4::supervisor {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::write_file;

std::string tiny_model() {
  if (const char* v = std::getenv("DS4D_DS4_VECTORS")) return std::string(v) + "/model.gguf";
  return std::string(DS4D_SHARED_DIR) + "/vectors/ds4-tiny/model.gguf";
}

class SupervisorBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(reports());
    write_file(root.path() / "proc/swaps", testing::kSwapsHeader);
    set_meminfo(64ull << 20, 2ull << 20);  // 64 GiB RAM, 2 GiB swap (KiB)
  }
  void set_meminfo(uint64_t total_kib, uint64_t swap_kib) {
    write_file(root.path() / "proc/meminfo", testing::meminfo_text(total_kib, total_kib / 2, swap_kib, swap_kib));
  }
  std::string reports() const { return work.str() + "/reports"; }
  std::string config(const std::string& extra_supervisor = "") {
    const std::string path = work.str() + "/ds4d.toml";
    write_file(path, "[model]\npath = \"" + tiny_model() +
                         "\"\ncontext = 4096\npin = \"none\"\n"
                         "[cache]\nhot_bytes = \"1GiB\"\n"
                         "[memory]\nfloor = \"1GiB\"\nreserve = \"1GiB\"\nswap_size = \"1GiB\"\n"
                         "oom_score_adj = 500\n"
                         "[supervisor]\nuser = \"root\"\ndaemon = \"" DS4D_FAKE_DAEMON_BIN
                         "\"\n"
                         "restart_delay_s = 1\nstop_timeout_s = 20\n" +
                         extra_supervisor);
    return path;
  }
  // Runs the supervisor; stdout/stderr to files. `notify` is the NOTIFY_SOCKET to give it.
  pid_t start(std::vector<std::string> args, const std::string& notify = "", const std::string& mode = "serve") {
    const pid_t pid = fork();
    if (pid == 0) {
      const int o = open((work.str() + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open((work.str() + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      if (notify.empty()) unsetenv("NOTIFY_SOCKET");
      else setenv("NOTIFY_SOCKET", notify.c_str(), 1);
      unsetenv("JOURNAL_STREAM");
      setenv("FAKE_DAEMON_DIR", reports().c_str(), 1);
      setenv("FAKE_DAEMON_MODE", mode.c_str(), 1);
      std::vector<char*> argv{const_cast<char*>(DS4D_SUPERVISOR_BIN)};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }
  int wait_exit(pid_t pid) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Collects datagrams from `from` until one contains `needle` (or 20 s pass); returns them all.
  std::string await_notify(NotifyRelaySocket& sock, pid_t from, const std::string& needle) {
    std::string all;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{sock.fd(), POLLIN, 0};
      poll(&p, 1, 200);
      for (const auto& d : sock.receive_all()) {
        if (d.sender != from) continue;
        all += d.text + "\n";
      }
      if (all.find(needle) != std::string::npos) break;
    }
    return all;
  }
  int count_lines(const std::string& f) {
    const std::string s = read_file(f);
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }

  testing::TempDir root, work;
};

TEST_F(SupervisorBinary, RefusesWithAReportWhenTheModelDoesNotFit) {
  set_meminfo(1ull << 20, 0);  // 1 GiB of RAM against a 1 GiB hot cache + reserve
  const pid_t pid = start({"--config", config(), "--sysroot", root.str()});
  EXPECT_EQ(wait_exit(pid), 78);
  const std::string err = read_file(work.str() + "/stderr");
  EXPECT_NE(err.find("verdict: does not fit"), std::string::npos) << err;
  EXPECT_NE(err.find("weights"), std::string::npos) << err;
  EXPECT_NE(err.find("MemTotal"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(reports() + "/pid"));
}

// server.max_batch live contexts each hold a full context of KV (1.31 GiB at 1M tokens of the
// tiny model): one fits in 8 GiB, eight do not, and the supervisor refuses those with the report.
TEST_F(SupervisorBinary, CountsEveryLiveContextAndRefusesAMaxBatchThatDoesNotFit) {
  set_meminfo(8ull << 20, 0);
  const pid_t one =
      start({"--config", config(), "--sysroot", root.str(), "--dry-run", "--context", "1048576", "--max-batch", "1"});
  EXPECT_EQ(wait_exit(one), 0);
  const std::string out = read_file(work.str() + "/stdout");
  EXPECT_NE(out.find("(1 live context × 1.31 GiB: 1,312 B/token × 1048576 tokens"), std::string::npos) << out;
  EXPECT_NE(out.find("verdict: fits"), std::string::npos) << out;
  EXPECT_NE(out.find(" --server-max-batch=1"), std::string::npos) << out;  // the daemon gets the same count

  const pid_t eight =
      start({"--config", config(), "--sysroot", root.str(), "--context", "1048576", "--max-batch", "8"});
  EXPECT_EQ(wait_exit(eight), 78);
  const std::string err = read_file(work.str() + "/stderr");
  EXPECT_NE(err.find("(8 live contexts × 1.31 GiB"), std::string::npos) << err;
  EXPECT_NE(err.find("verdict: does not fit"), std::string::npos) << err;
  EXPECT_NE(err.find("live contexts (max batch)"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(reports() + "/pid"));
}

TEST_F(SupervisorBinary, DryRunPrintsPlanAndEveryChangeAndChangesNothing) {
  set_meminfo(64ull << 20, 0);  // no swap
  write_file(root.path() / "lib/systemd/system/earlyoom.service", "[Service]\n");
  const std::string old_dropin = "[Service]\nExecStart=\nExecStart=/usr/bin/earlyoom -m 10\n";
  write_file(root.path() / "etc/systemd/system/earlyoom.service.d/50-ds4d.conf", old_dropin);
  const pid_t pid = start({"--config", config(), "--sysroot", root.str(), "--dry-run"});
  EXPECT_EQ(wait_exit(pid), 0);
  const std::string out = read_file(work.str() + "/stdout");
  EXPECT_NE(out.find("verdict: fits"), std::string::npos) << out;
  EXPECT_NE(out.find("would: create swap file /var/lib/ds4d/swapfile of 1.00 GiB"), std::string::npos) << out;
  EXPECT_NE(out.find("would: run mkswap " + root.str() + "/var/lib/ds4d/swapfile"), std::string::npos) << out;
  EXPECT_NE(out.find("would: write /etc/systemd/system/earlyoom.service.d/50-ds4d.conf"), std::string::npos) << out;
  EXPECT_NE(out.find("would: run systemctl try-restart earlyoom.service"), std::string::npos) << out;
  EXPECT_NE(out.find("would: launch " DS4D_FAKE_DAEMON_BIN " --config"), std::string::npos) << out;
  EXPECT_NE(out.find("oom_score_adj 500"), std::string::npos) << out;
  EXPECT_EQ(read_file(root.path() / "etc/systemd/system/earlyoom.service.d/50-ds4d.conf"), old_dropin);
  EXPECT_FALSE(std::filesystem::exists(root.path() / "var/lib/ds4d/swapfile"));
  EXPECT_FALSE(std::filesystem::exists(reports() + "/pid"));
}

TEST_F(SupervisorBinary, LaunchesRelaysReadinessAndStopsOnSigterm) {
  NotifyRelaySocket systemd;  // the test is systemd
  const pid_t sup = start({"--config", config(), "--sysroot", root.str(), "--log-level=debug", "--port", "18555",
                           "--memory-swap-size=1GiB"},
                          systemd.address());
  const std::string got = await_notify(systemd, sup, "READY=1");
  ASSERT_NE(got.find("READY=1"), std::string::npos) << got << read_file(work.str() + "/stderr");
  EXPECT_NE(got.find("STATUS=Loading weights 50%"), std::string::npos) << got;
  EXPECT_NE(got.find("EXTEND_TIMEOUT_USEC=30000000"), std::string::npos) << got;
  EXPECT_NE(got.find("STATUS=Serving fake"), std::string::npos) << got;
  EXPECT_EQ(got.find("MAINPID"), std::string::npos) << got;

  const pid_t daemon = std::stoi(read_file(reports() + "/pid"));
  EXPECT_NE(daemon, sup);
  EXPECT_EQ(host::read_oom_score_adj(daemon), 500);  // raised by the supervisor, read back from /proc
  EXPECT_EQ(read_file(reports() + "/notify_socket").rfind("@ds4d-supervisor/", 0), 0u);
  const std::string args = read_file(reports() + "/args");
  EXPECT_NE(args.find("--config\n" + work.str() + "/ds4d.toml\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--log-level=debug\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--server-port=18555\n"), std::string::npos) << args;  // daemon key: forwarded
  EXPECT_EQ(args.find("--memory-swap-size"), std::string::npos) << args;     // supervisor key: kept

  kill(sup, SIGTERM);
  const std::string stopping = await_notify(systemd, sup, "STOPPING=1");
  EXPECT_NE(stopping.find("STOPPING=1"), std::string::npos) << stopping;
  EXPECT_EQ(wait_exit(sup), 0);
  EXPECT_EQ(read_file(reports() + "/sigterm"), "1");
  EXPECT_NE(kill(daemon, 0), 0);  // gone
}

TEST_F(SupervisorBinary, RestartsACrashAndExitsNonZeroOnAForeignKill) {
  NotifyRelaySocket systemd;
  const pid_t sup = start({"--config", config(), "--sysroot", root.str()}, systemd.address(), "crash-once");
  const std::string got = await_notify(systemd, sup, "READY=1");
  ASSERT_NE(got.find("READY=1"), std::string::npos) << got << read_file(work.str() + "/stderr");
  EXPECT_NE(got.find("exited with status 3; restarting in 1 s"), std::string::npos) << got;
  EXPECT_EQ(count_lines(reports() + "/starts"), 2);
  const pid_t daemon = std::stoi(read_file(reports() + "/pid"));
  kill(daemon, SIGKILL);  // what the kernel OOM killer does
  EXPECT_EQ(wait_exit(sup), 128 + SIGKILL);
  EXPECT_NE(read_file(work.str() + "/stderr").find("killed by SIGKILL"), std::string::npos);
}

TEST_F(SupervisorBinary, DaemonConfigErrorIsNotRestarted) {
  const pid_t sup = start({"--config", config(), "--sysroot", root.str()}, "", "config-error");
  EXPECT_EQ(wait_exit(sup), 78);
  EXPECT_EQ(count_lines(reports() + "/starts"), 1);
}

TEST_F(SupervisorBinary, UnknownConfigKeyIsAConfigError) {
  const std::string path = config("bogus_key = 1\n");
  const pid_t sup = start({"--config", path, "--sysroot", root.str()});
  EXPECT_EQ(wait_exit(sup), 78);
  const std::string err = read_file(work.str() + "/stderr");
  EXPECT_NE(err.find("ds4d.toml:"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key supervisor.bogus_key"), std::string::npos) << err;
}

}  // namespace
}  // namespace ds4::supervisor
