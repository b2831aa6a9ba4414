#pragma once
// Byte quantities as people write them in configuration and on command lines: "12GiB", "5.64 GiB",
// "512M", "86720111552". Binary suffixes (K, M, G, T, KiB, MiB, GiB, TiB) are powers of 1024;
// the decimal ones (KB, MB, GB, TB) are powers of 1000, because a planner that confuses the two
// is off by 7 % at this scale. Fractions are allowed and rounded to the nearest byte.
#include <cstdint>
#include <string>
#include <string_view>

namespace ds4::planner {

inline constexpr uint64_t kKiB = 1024ull;
inline constexpr uint64_t kMiB = 1024ull * kKiB;
inline constexpr uint64_t kGiB = 1024ull * kMiB;

// Throws std::invalid_argument naming the text when it is not a byte quantity.
uint64_t parse_byte_size(std::string_view text);

// "80.76 GiB" (two decimals); used in reports next to the exact byte count.
std::string format_gib(uint64_t bytes);
// "86,720,111,552" (thousands separators), the exact count a report prints.
std::string format_bytes_exact(uint64_t bytes);

}  // namespace ds4::planner
