#pragma once
// Ensure the host has at least a configured amount of swap, creating and enabling a swap file when
// it does not. Idempotent (every unit restart runs it again), and it never turns swap off; any
// swap, zram included, counts toward the total. The four cases in order (already enough, our file
// active, our file ready, create it) and the kernel facts they rest on:
// docs/memory.md §the-swap-sequence, §swap.
#include <cstdint>
#include <string>
#include <vector>

#include "host/system_changes.hpp"

namespace ds4::host {

struct SwapRequest {
  std::string file = "/var/lib/ds4d/swapfile";
  uint64_t size_bytes = 16ull << 30;  // wanted SwapTotal, and the size of our file; 0 disables
};

enum class SwapResult { Disabled, AlreadyEnough, AlreadyActive, ActivatedExisting, Created };
const char* swap_result_name(SwapResult r);

// Throws std::runtime_error with the path and the failing step (e.g. not enough free space on the
// filesystem, fallocate/write error, mkswap/swapon failure).
SwapResult ensure_swap(const SwapRequest& request, SystemChanges& changes);

// Paths in /proc/swaps (first column, octal escapes such as \040 decoded), one per swap area.
std::vector<std::string> active_swap_paths(const std::string& proc_swaps_file);

// True when the kernel refuses fallocate(2) on `path` with ETXTBSY, i.e. the file is an active
// swap area, whatever mount namespace swapped it on. Opens the file for writing and asks to
// preallocate its first byte keeping the size (a no-op on our fully allocated file); any other
// outcome (missing file, no permission, no fallocate support) is "not known active".
bool is_active_swap_file(const std::string& path);

}  // namespace ds4::host
