#pragma once
// Token-prefix helpers shared by the RAM and disk checkpoint stores and the serving layer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

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

// The value of keeping a checkpoint, used by both stores to choose what to evict: tokens saved
// per byte held, times one plus its hits decayed with a half-life (so a once-hot checkpoint does
// not stay pinned forever). Lowest value goes first; ties go to the least recently used.
inline double checkpoint_value(double hits, double age_seconds, double half_life_seconds, uint64_t tokens,
                               uint64_t bytes) {
  const double decayed = hits * std::exp2(-std::max(0.0, age_seconds) / std::max(1.0, half_life_seconds));
  return (decayed + 1.0) * double(tokens) / double(std::max<uint64_t>(1, bytes));
}

}  // namespace ds4::cache
