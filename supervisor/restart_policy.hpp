#pragma once
// What the supervisor does when ds4d exits. Pure logic, so every case is a table test.
//
//   we asked it to stop (SIGTERM forwarded)     → exit 0 (exit status 0 or our signal)
//   exit 0 on its own                           → exit 0 (a clean stop, e.g. systemd signalled
//                                                 the whole cgroup)
//   exit 78 (EX_CONFIG: bad configuration)      → exit 78; restarting cannot help, and the unit's
//                                                 RestartPreventExitStatus=78 stops the loop
//   other non-zero exit, or a crash signal      → restart after a delay that doubles from
//   (SEGV, ABRT, BUS, ILL, FPE, SYS, TRAP)        restart_delay_s up to restart_max_delay_s; after
//                                                 max_restarts crashes within restart_window_s,
//                                                 give up with exit 1
//   killed by any other signal we did not send  → exit 128+signal. This is the kernel OOM killer's
//   (SIGKILL, SIGTERM from earlyoom, ...)         SIGKILL or earlyoom's SIGTERM: the host is short
//                                                 of memory, which a restart in place would not
//                                                 fix; the non-zero exit makes systemd's
//                                                 Restart=on-failure restart the unit (after
//                                                 RestartSec), where a SIGTERM would count as clean.
#include <chrono>
#include <deque>
#include <string>

#include "config/exit_status.hpp"

namespace ds4::supervisor {

struct ChildExit {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
};

struct RestartSettings {
  std::chrono::seconds initial_delay{1};
  std::chrono::seconds max_delay{60};
  unsigned max_restarts = 5;
  std::chrono::seconds window{600};
};

struct ExitDecision {
  bool restart = false;
  std::chrono::seconds delay{0};  // when restarting
  int exit_code = 0;              // when not
  std::string reason;             // one line for the log and STATUS=
};

class RestartPolicy {
 public:
  explicit RestartPolicy(RestartSettings s) : s_(s) {}
  ExitDecision on_exit(const ChildExit& e, bool stop_requested, std::chrono::steady_clock::time_point now);

 private:
  RestartSettings s_;
  std::deque<std::chrono::steady_clock::time_point> crashes_;
};

std::string describe_exit(const ChildExit& e);  // "exited with status 3" / "killed by SIGKILL"

}  // namespace ds4::supervisor
