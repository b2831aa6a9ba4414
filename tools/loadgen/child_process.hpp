// Child processes of the load tool: the daemon under test (--spawn) and the external
// keep-alive clients (--side). POSIX fork/exec; the caller reaps what it starts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ds4::load {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read end of the child's stdout pipe, when captured (caller closes it)
};

// Starts argv[0] (searched in PATH) with `env` added to the environment; stdout is captured in
// a pipe when `capture_stdout`, stderr goes to `stderr_path` when not empty. Throws
// std::runtime_error naming the program when fork or exec fails.
Child spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                  bool capture_stdout, const std::string& stderr_path);

// Waits up to `limit` for `pid` to exit; returns its exit status (128 + signal when it was
// killed), or nullopt when it is still running at the limit.
std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds limit);

// The resident memory of a process, KiB, from /proc/PID/status: VmRSS (everything resident,
// including the mmap'ed model pages, which the kernel may drop and fault in again under
// pressure from other processes) and RssAnon (heap and stacks: where a leak shows).
struct ResidentMemory {
  uint64_t rss_kib = 0;
  uint64_t anon_kib = 0;
};
// Zeros when the process is gone.
ResidentMemory read_resident_memory(pid_t pid);

}  // namespace ds4::load
