#pragma once
// What the kernel says about memory: /proc/meminfo and /proc/pressure/memory (PSI), parsed.
//
// The planner compares its total against MemTotal; the supervisor checks SwapTotal; the daemon's
// memory watch polls MemAvailable and PSI to decide whether to admit new work. All of them read
// through these functions, with the path a parameter so tests feed fabricated files. meminfo's
// "kB" is KiB; values are returned in bytes.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ds4::host {

struct MemInfo {
  uint64_t mem_total = 0;
  uint64_t mem_available = 0;
  uint64_t swap_total = 0;
  uint64_t swap_free = 0;
  std::map<std::string, uint64_t, std::less<>> fields;  // every field, in bytes
};

// Throws std::runtime_error naming the path (and line) when the file cannot be read, a line is
// malformed, or MemTotal is missing. MemAvailable is required too (Linux ≥ 3.14 has it).
MemInfo read_meminfo(const std::string& path = "/proc/meminfo");
MemInfo parse_meminfo(std::string_view text, const std::string& source);

struct PsiLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent of wall time stalled
  uint64_t total_us = 0;
};

struct Psi {
  PsiLine some;
  PsiLine full;
  bool has_full = false;
};

// Throws std::runtime_error naming the path when the file is missing or malformed (kernels
// without CONFIG_PSI have no /proc/pressure).
Psi read_psi(const std::string& path = "/proc/pressure/memory");
Psi parse_psi(std::string_view text, const std::string& source);

}  // namespace ds4::host
