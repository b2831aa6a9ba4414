#pragma once
// Ensure the host has at least a configured amount of swap, creating and enabling a swap file when
// it does not. Idempotent (every unit restart runs it again), and it never turns swap off:
//   1. SwapTotal (from /proc/meminfo) plus one page per swap area already at least the wanted
//      size: nothing to do. The page is mkswap's header, which the kernel does not count, so a
//      256 MiB swap file shows as SwapTotal 262140 KiB; without it our own active file would look
//      one page short forever.
//   2. Our file is already active: nothing to do (it is smaller than wanted only if the
//      configuration grew; that is reported, the active file is left alone). Active means listed
//      in /proc/swaps under its path, or, since /proc/swaps names a file swapped on inside
//      another mount namespace (the unit's StateDirectory/ProtectSystem sandbox of a previous
//      run) relative to that namespace's bind mount ("/swapfile"), refused by fallocate(2) with
//      ETXTBSY, which the kernel answers for every active swap file and nothing else.
//   3. Our file exists, is the wanted size and carries a swap signature: fix its mode to 0600 and
//      swapon it. A swapon that fails with EBUSY ("Device or resource busy": the kernel already
//      uses this inode as swap) means active as well, never an error.
//   4. Otherwise (absent, wrong size, no signature; it is not active, so replacing it is safe):
//      create it 0600, mark it NOCOW (FS_NOCOW_FL via FS_IOC_SETFLAGS, what `chattr +C` does)
//      while still empty when it lives on btrfs, preallocate with fallocate(2), or write zeros
//      (what dd from /dev/zero does) where the filesystem does not support fallocate, fsync, then
//      `mkswap` and `swapon`.
// The swap test ignores zram/other swap only in the sense that any swap counts toward the total;
// see docs/memory.md §swap.
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
