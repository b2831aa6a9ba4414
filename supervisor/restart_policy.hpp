#pragma once
// What the supervisor does when ds4d exits: exit 0 after a requested or clean stop, exit 78 on a
// bad configuration, restart with a doubling delay after a crash (exit 1 after too many), exit
// 128+signal when killed by a signal it did not send. Pure logic, so every case is a table test.
// The table and why: supervisor/README.md §exits-and-restarts-restart_policycpp.
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
