#pragma once
// The sampler's random numbers: xoshiro256** seeded through splitmix64.
//
// Sampling must be reproducible: the same seed, logits and settings give the same tokens on every
// machine and every build. std::mt19937 is portable but std::uniform_real_distribution is not
// (its algorithm is implementation-defined), so this is a small self-contained generator with a
// fixed conversion to doubles. xoshiro256** (Blackman & Vigna) is fast, has a 2^256 period and
// passes BigCrush; splitmix64 expands a 64-bit seed into its state so that nearby seeds give
// unrelated streams and the all-zero state cannot occur.
#include <cstdint>

namespace ds4::sampler {

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) { reseed(seed); }

  void reseed(uint64_t seed) {
    for (uint64_t& word : s_) word = splitmix64(seed);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // One step of splitmix64: advances `state` and returns a well-mixed word.
  static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace ds4::sampler
