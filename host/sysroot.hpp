#pragma once
// Every file the supervisor reads or changes on the host goes through a Sysroot: an optional
// prefix placed before absolute paths ("/etc/x" → "<root>/etc/x"). With the default empty prefix
// it is the real system; tests point it at a temporary directory holding a fake /proc/meminfo,
// /proc/swaps, /usr/bin/earlyoom and so on, so swap and earlyoom handling run without root.
#include <string>
#include <string_view>

namespace ds4::host {

class Sysroot {
 public:
  Sysroot() = default;
  explicit Sysroot(std::string prefix);
  // Maps an absolute host path into the root. Relative paths are rejected (std::invalid_argument).
  std::string path(std::string_view absolute) const;
  const std::string& prefix() const { return prefix_; }
  bool is_real_root() const { return prefix_.empty(); }

 private:
  std::string prefix_;
};

}  // namespace ds4::host
