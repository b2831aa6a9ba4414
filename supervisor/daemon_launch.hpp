#pragma once
// Starting ds4d from the supervisor: fork, then in the child, in this order,
//   1. reset the signal mask and dispositions the supervisor blocked for its signalfd;
//   2. PR_SET_PDEATHSIG(SIGTERM): if the supervisor dies, the daemon is told to stop;
//   3. raise RLIMIT_MEMLOCK to unlimited when asked (needs root; for --pin lock);
//   4. write oom_score_adj (lowering it needs CAP_SYS_RESOURCE, so before the drop);
//   5. drop to the service user (setgroups, setgid, setuid) when one is given;
//   6. set NOTIFY_SOCKET to the relay, WATCHDOG_USEC/WATCHDOG_PID for the child itself;
//   7. exec the daemon.
// A failure in steps 3-7 is written to a close-on-exec pipe, so spawn() reports it in the parent
// as an exception ("oom_score_adj -900: Permission denied") instead of a bare exit status.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "host/privileges.hpp"

namespace ds4::supervisor {

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is the executable path
  std::optional<int> oom_score_adj;
  std::optional<host::ServiceIdentity> identity;  // drop to this user (requires root)
  bool unlimited_memlock = false;
  std::string notify_socket;  // "" : unset NOTIFY_SOCKET in the child
  std::optional<unsigned long long> watchdog_usec;
};

// Returns the child's pid once it has exec'd. Throws std::runtime_error with the failing step.
pid_t spawn_daemon(const LaunchSpec& spec);

}  // namespace ds4::supervisor
