// Idempotent swap file creation and activation; the steps: docs/memory.md §the-swap-sequence.
#include "host/swap_file.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "engine/planner/byte_size.hpp"
#include "host/host_memory.hpp"

namespace ds4::host {
namespace fs = std::filesystem;
namespace {

constexpr char kSwapMagic[] = "SWAPSPACE2";  // at offset pagesize - 10 (util-linux mkswap)

std::runtime_error sys_error(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

std::string decode_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_swap_signature(const std::string& path) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(page - 10);
  char buf[10] = {};
  in.read(buf, 10);
  return in.gcount() == 10 && std::memcmp(buf, kSwapMagic, 10) == 0;
}

void set_nocow_if_btrfs(int fd, const std::string& path) {
  struct statfs sfs {};
  if (fstatfs(fd, &sfs) != 0) throw sys_error("fstatfs " + path);
  if (static_cast<unsigned long>(sfs.f_type) != BTRFS_SUPER_MAGIC) return;
  int flags = 0;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) throw sys_error("FS_IOC_GETFLAGS " + path);
  flags |= FS_NOCOW_FL;
  if (ioctl(fd, FS_IOC_SETFLAGS, &flags) != 0) throw sys_error("FS_IOC_SETFLAGS (NOCOW) " + path);
}

void zero_fill(int fd, uint64_t size, const std::string& path) {
  std::vector<char> zeros(1 << 20, 0);
  uint64_t done = 0;
  while (done < size) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), size - done));
    const ssize_t w = write(fd, zeros.data(), n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw sys_error("write zeros to " + path);
    }
    done += static_cast<uint64_t>(w);
    // Keep the page cache from filling with zeros on a host that is short of memory.
    if (done % (64u << 20) == 0) {
      fdatasync(fd);
      posix_fadvise(fd, 0, static_cast<off_t>(done), POSIX_FADV_DONTNEED);
    }
  }
}

void create_swap_file(const std::string& path, uint64_t size) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("create " + dir.string() + ": " + ec.message());
  struct statvfs vfs {};
  if (statvfs(dir.c_str(), &vfs) != 0) throw sys_error("statvfs " + dir.string());
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (free_bytes < size)
    throw std::runtime_error("not enough free space for swap file " + path + ": need " + planner::format_gib(size) +
                             ", " + planner::format_gib(free_bytes) + " free");
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) throw sys_error("create " + path);
  try {
    if (fchmod(fd, 0600) != 0) throw sys_error("chmod 600 " + path);
    set_nocow_if_btrfs(fd, path);  // must happen while the file is still empty
    if (fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0) {
      if (errno != EOPNOTSUPP && errno != ENOSYS) throw sys_error("fallocate " + path);
      zero_fill(fd, size, path);
    }
    if (fsync(fd) != 0) throw sys_error("fsync " + path);
  } catch (...) {
    close(fd);
    unlink(path.c_str());
    throw;
  }
  close(fd);
}

// Runs swapon on our file. EBUSY from swapon(2) on a regular file means the kernel already uses
// this inode as swap (swapon(8) prints strerror(EBUSY)); that is success, reported as true. The
// ETXTBSY probe confirms it where the message is localized. Any other failure throws.
bool swapon_found_it_active(SystemChanges& changes, const std::string& real) {
  try {
    changes.run_checked({"swapon", real});
    return false;
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.find(std::strerror(EBUSY)) != std::string::npos ||
        what.find("Device or resource busy") != std::string::npos || is_active_swap_file(real))
      return true;
    throw;
  }
}

}  // namespace

const char* swap_result_name(SwapResult r) {
  switch (r) {
    case SwapResult::Disabled: return "disabled";
    case SwapResult::AlreadyEnough: return "already enough swap";
    case SwapResult::AlreadyActive: return "swap file already active";
    case SwapResult::ActivatedExisting: return "activated existing swap file";
    case SwapResult::Created: return "created swap file";
  }
  return "?";
}

std::vector<std::string> active_swap_paths(const std::string& proc_swaps_file) {
  std::vector<std::string> paths;
  std::ifstream in(proc_swaps_file);
  if (!in) throw std::runtime_error(proc_swaps_file + ": cannot read");
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      if (line.rfind("Filename", 0) == 0) continue;
    }
    std::istringstream w(line);
    std::string p;
    if (w >> p) paths.push_back(decode_octal(p));
  }
  return paths;
}

bool is_active_swap_file(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  // vfs_fallocate checks IS_SWAPFILE before the mode or filesystem support, so this answers
  // ETXTBSY for an active swap file on any filesystem; KEEP_SIZE over an allocated byte changes
  // nothing on an inactive one.
  const bool busy = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1) != 0 && errno == ETXTBSY;
  close(fd);
  return busy;
}

SwapResult ensure_swap(const SwapRequest& req, SystemChanges& changes) {
  using planner::format_gib;
  if (req.size_bytes == 0) {
    changes.note("swap: not managed (memory.swap_size = 0)");
    return SwapResult::Disabled;
  }
  const Sysroot& root = changes.root();
  const MemInfo mem = read_meminfo(root.path("/proc/meminfo"));
  const auto active = active_swap_paths(root.path("/proc/swaps"));
  // mkswap's header page is not counted in SwapTotal: add it back once per area.
  const uint64_t header_bytes = static_cast<uint64_t>(active.size()) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (mem.swap_total + header_bytes >= req.size_bytes) {
    changes.note("swap: " + format_gib(mem.swap_total) + " present in " + std::to_string(active.size()) +
                 " area(s) (+" + std::to_string(header_bytes) + " B of swap headers), at least " +
                 format_gib(req.size_bytes) + " wanted; nothing to do");
    return SwapResult::AlreadyEnough;
  }
  const std::string real = root.path(req.file);
  const auto already_active = [&](const std::string& how) {
    changes.note("swap: " + req.file + " is already active (" + how + "); SwapTotal " + format_gib(mem.swap_total) +
                 " is below the wanted " + format_gib(req.size_bytes) + " (grow it by hand: swapoff, remove, restart)");
    return SwapResult::AlreadyActive;
  };
  if (std::find(active.begin(), active.end(), req.file) != active.end()) return already_active("listed in /proc/swaps");
  if (is_active_swap_file(real)) return already_active("fallocate refused with ETXTBSY");
  struct stat st {};
  if (lstat(real.c_str(), &st) == 0) {
    const bool usable =
        S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == req.size_bytes && has_swap_signature(real);
    if (usable) {
      if ((st.st_mode & 07777) != 0600)
        changes.perform("chmod 600 " + req.file, [&] {
          if (chmod(real.c_str(), 0600) != 0) throw sys_error("chmod 600 " + real);
        });
      if (swapon_found_it_active(changes, real)) return already_active("swapon: Device or resource busy");
      return SwapResult::ActivatedExisting;
    }
    if (!S_ISREG(st.st_mode))
      throw std::runtime_error("swap file path " + real + " exists and is not a regular file; refusing to replace it");
    changes.perform("remove unusable inactive swap file " + req.file + " (size " + std::to_string(st.st_size) +
                        " B or no swap signature)",
                    [&] {
                      if (unlink(real.c_str()) != 0) throw sys_error("remove " + real);
                    });
  }
  changes.perform("create swap file " + req.file + " of " + format_gib(req.size_bytes) + " (" +
                      std::to_string(req.size_bytes) + " B): mode 0600, NOCOW on btrfs, fallocate or zero-fill",
                  [&] { create_swap_file(real, req.size_bytes); });
  changes.run_checked({"mkswap", real});
  changes.run_checked({"swapon", real});
  return SwapResult::Created;
}

}  // namespace ds4::host
