#pragma once
// Token-prefix helpers shared by the RAM and disk checkpoint stores and the serving layer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace ds4::cache {

// Length of the longest common prefix of a and b.
template <class T>
size_t common_prefix(std::span<const T> a, std::span<const T> b) {
  const size_t n = std::min(a.size(), b.size());
  return size_t(std::mismatch(a.begin(), a.begin() + n, b.begin()).first - a.begin());
}

// True when `prefix` is a (not necessarily strict) prefix of `of`.
template <class T>
bool is_prefix(std::span<const T> prefix, std::span<const T> of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

// FNV-1a 64 over the little-endian bytes of the first i tokens, for every i in 0..size(): out[i].
// A generated turn is located in the token stream by (where it ends, hash up to there), so any
// checkpoint's tokens can be tested for containing it with one lookup (serving: contract records
// travel with the checkpoints that hold their turns).
template <class T>
std::vector<uint64_t> prefix_hashes(std::span<const T> tokens) {
  std::vector<uint64_t> out(tokens.size() + 1);
  uint64_t h = 0xcbf29ce484222325ULL;
  out[0] = h;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto v = static_cast<uint64_t>(tokens[i]);
    for (int b = 0; b < int(sizeof(T)); ++b, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ULL;
    out[i + 1] = h;
  }
  return out;
}

// The value of keeping a checkpoint, used by both stores to choose what to evict: tokens saved
// per byte held, times one plus its hits decayed with a half-life (so a once-hot checkpoint does
// not stay pinned forever). Lowest value goes first; ties go to the least recently used.
inline double checkpoint_value(double hits, double age_seconds, double half_life_seconds, uint64_t tokens,
                               uint64_t bytes) {
  const double decayed = hits * std::exp2(-std::max(0.0, age_seconds) / std::max(1.0, half_life_seconds));
  return (decayed + 1.0) * double(tokens) / double(std::max<uint64_t>(1, bytes));
}

}  // namespace ds4::cache
