#pragma once
// oom_score_adj for the daemon. With 80 GiB resident, the daemon is the kernel's and earlyoom's
// first victim at adj 0 (badness ≈1045 of 1333; earlyoom --avoid only subtracts 300). At the
// default −900 its badness falls to ≈445, below any small process (≈667), so the rest of the
// host is killed first, yet a leaking daemon can still be killed (−1000 would make it immortal
// and turn its leak into a kernel panic). docs/memory.md §oom-scores, §oom_score_adj-rules.
//
// The supervisor writes the value in the forked child before dropping privileges: lowering below
// the current floor needs CAP_SYS_RESOURCE, the value and the floor are inherited across exec and
// setuid, and an unprivileged process may only raise it (or lower it back to that floor). These
// functions use only open/write/close so they are safe between fork and exec.
#include <sys/types.h>

namespace ds4::host {

inline constexpr int kDefaultOomScoreAdj = -900;

// Writes `value` to /proc/self/oom_score_adj. Returns 0 or an errno value (EACCES when lowering
// without CAP_SYS_RESOURCE, EINVAL out of range).
int write_own_oom_score_adj(int value) noexcept;

// Reads /proc/<pid>/oom_score_adj. Throws std::runtime_error when the process is gone.
int read_oom_score_adj(pid_t pid);

}  // namespace ds4::host
