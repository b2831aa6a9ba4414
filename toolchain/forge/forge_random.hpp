#pragma once
// The forge's random numbers: SplitMix64 for bits, the Marsaglia polar method for normals.
// Written out here (not std::normal_distribution, whose algorithm differs between standard
// libraries) so a seed produces the same model bytes on every toolchain: the only floating-point
// functions involved are sqrt (correctly rounded by IEEE 754) and log from glibc.
#include <cmath>
#include <cstdint>
#include <string_view>

namespace ds4::gguf::forge {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n) (n > 0), by rejection so every value is equally likely.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
  }
  double normal(double mean, double std) {
    if (have_spare_) {
      have_spare_ = false;
      return mean + std * spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double m = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * m;
    have_spare_ = true;
    return mean + std * (u * m);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool have_spare_ = false;
};

// Per-stream seed: the model seed mixed with a name (FNV-1a), so every tensor draws from its own
// stream and the bytes of one tensor do not depend on which tensors come before it.
inline uint64_t stream_seed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  Rng mix(seed ^ h);
  return mix.next();
}

}  // namespace ds4::gguf::forge
