// fork/exec of ds4d with oom_score_adj, privilege drop and notify environment; see daemon_launch.hpp.
#include "supervisor/daemon_launch.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "host/oom_adjust.hpp"

extern char** environ;

namespace ds4::supervisor {
namespace {

[[noreturn]] void child_fail(int fd, const char* step, int err) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, "%s: %s", step, std::strerror(err));
  if (n > 0) (void)!write(fd, buf, static_cast<size_t>(n));
  _exit(127);
}

}  // namespace

pid_t spawn_daemon(const LaunchSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("spawn_daemon: empty argv");
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char oom_step[64];
  std::snprintf(oom_step, sizeof oom_step, "oom_score_adj %d", spec.oom_score_adj.value_or(0));
  const std::string drop_step = spec.identity ? "drop privileges to user " + spec.identity->user : "";
  const std::string exec_step = "exec " + spec.argv[0];

  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(pipefd[0]);
    close(pipefd[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    // The supervisor is single-threaded, so everything below is safe after fork.
    close(pipefd[0]);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE}) signal(s, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) _exit(1);  // the supervisor already died
    if (spec.unlimited_memlock) {
      const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
      if (setrlimit(RLIMIT_MEMLOCK, &unlimited) != 0) child_fail(pipefd[1], "raise RLIMIT_MEMLOCK", errno);
    }
    if (spec.oom_score_adj) {
      if (const int err = host::write_own_oom_score_adj(*spec.oom_score_adj)) child_fail(pipefd[1], oom_step, err);
    }
    if (spec.identity) {
      if (const int err = host::drop_privileges(*spec.identity)) child_fail(pipefd[1], drop_step.c_str(), err);
      setenv("USER", spec.identity->user.c_str(), 1);
      setenv("LOGNAME", spec.identity->user.c_str(), 1);
      if (!spec.identity->home.empty()) setenv("HOME", spec.identity->home.c_str(), 1);
    }
    if (spec.notify_socket.empty()) unsetenv("NOTIFY_SOCKET");
    else setenv("NOTIFY_SOCKET", spec.notify_socket.c_str(), 1);
    unsetenv("WATCHDOG_PID");
    unsetenv("WATCHDOG_USEC");
    if (spec.watchdog_usec) {
      setenv("WATCHDOG_USEC", std::to_string(*spec.watchdog_usec).c_str(), 1);
      setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
    }
    execv(args[0], args.data());
    child_fail(pipefd[1], exec_step.c_str(), errno);
  }
  close(pipefd[1]);
  char buf[256];
  ssize_t n;
  std::string error;
  while ((n = read(pipefd[0], buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    error.append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  if (!error.empty()) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("starting the daemon failed at " + error);
  }
  return pid;
}

}  // namespace ds4::supervisor
