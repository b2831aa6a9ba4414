#pragma once
// Ensure the host has at least a configured amount of swap, creating and enabling a swap file when
// it does not. Idempotent, and it never turns swap off:
//   1. SwapTotal (from /proc/meminfo) already at least the wanted size: nothing to do.
//   2. Our file already listed in /proc/swaps: nothing to do (it is smaller than wanted only if
//      the configuration grew; that is reported, the active file is left alone).
//   3. Our file exists, is the wanted size and carries a swap signature: fix its mode to 0600 and
//      swapon it.
//   4. Otherwise (absent, wrong size, no signature; it is not active, so replacing it is safe):
//      create it 0600, mark it NOCOW (FS_NOCOW_FL via FS_IOC_SETFLAGS, what `chattr +C` does)
//      while still empty when it lives on btrfs, preallocate with fallocate(2), or write zeros
//      (what dd from /dev/zero does) where the filesystem does not support fallocate, fsync, then
//      `mkswap` and `swapon`.
// The swap test ignores zram/other swap only in the sense that any swap counts toward the total;
// see ops.md §3.
#include <cstdint>
#include <string>

#include "supervisor/system_changes.hpp"

namespace ds4::sysconf {

struct SwapRequest {
  std::string file = "/var/lib/ds4d/swapfile";
  uint64_t size_bytes = 16ull << 30;  // wanted SwapTotal, and the size of our file; 0 disables
};

enum class SwapResult { disabled, already_enough, already_active, activated_existing, created };
const char* swap_result_name(SwapResult r);

// Throws std::runtime_error with the path and the failing step (e.g. not enough free space on the
// filesystem, fallocate/write error, mkswap/swapon failure).
SwapResult ensure_swap(const SwapRequest& request, SystemChanges& changes);

// Paths in /proc/swaps (first column, octal escapes such as \040 decoded).
std::vector<std::string> active_swap_paths(const std::string& proc_swaps_file);

}  // namespace ds4::sysconf
