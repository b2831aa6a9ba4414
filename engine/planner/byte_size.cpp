// Parsing and printing of byte quantities; see byte_size.hpp for the accepted syntax.
#include "engine/planner/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ds4::planner {
namespace {

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
  const std::string s = lower(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string number = s.substr(0, i);
  const std::string unit = s.substr(i);
  auto bad = [&](const char* why) {
    return std::invalid_argument("not a byte size: '" + std::string(text) + "' (" + why + ")");
  };
  if (number.empty() || number.find('.') != number.rfind('.')) throw bad("expected a number");
  double multiplier = 1;
  if (unit.empty() || unit == "b") multiplier = 1;
  else if (unit == "k" || unit == "kib") multiplier = 0x1p10;
  else if (unit == "m" || unit == "mib") multiplier = 0x1p20;
  else if (unit == "g" || unit == "gib") multiplier = 0x1p30;
  else if (unit == "t" || unit == "tib") multiplier = 0x1p40;
  else if (unit == "kb") multiplier = 1e3;
  else if (unit == "mb") multiplier = 1e6;
  else if (unit == "gb") multiplier = 1e9;
  else if (unit == "tb") multiplier = 1e12;
  else throw bad("unknown unit; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB");
  if (number.find('.') == std::string::npos && multiplier == 1) {
    size_t used = 0;
    const unsigned long long v = std::stoull(number, &used);
    return v;
  }
  const double v = std::stod(number) * multiplier;
  if (!(v >= 0) || v > 9.0e18) throw bad("out of range");
  return static_cast<uint64_t>(std::llround(v));
}

std::string format_gib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
  return buf;
}

std::string format_bytes_exact(uint64_t bytes) {
  std::string digits = std::to_string(bytes);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    out += digits[i];
    if (i + 1 < n && (n - i - 1) % 3 == 0) out += ',';
  }
  return out;
}

}  // namespace ds4::planner
