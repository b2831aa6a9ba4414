#pragma once
// Internal (arch/x86 only, compiled with -mavx2 -mfma -mf16c): the 256-element formats' blocks
// taken eight at a time, lane k = block b + k. Reducing eight blocks' integer partials together
// replaces eight horizontal sums with three hadds per four blocks, and in the Fast order the
// eight slices become the lanes of one accumulator (docs/arithmetic.md §slices: eight
// consecutive blocks are one block of every slice), so a group costs one or two vector FMAs.
// GroupSum<Sum> takes a group's vectors into the order's policy (block_orders.hpp): SlicedSum
// runs fast_order.hpp's block updates lane-wise (the same roundings: mul, then fma or fnmadd,
// which is fma(-a, b, c) exactly); SerialSum takes the lanes block by block.
#include <immintrin.h>

#include <cstdint>

#include "engine/quant/arch/block_orders.hpp"
#include "engine/quant/arch/x86/avx2_util.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::quant::detail::avx2 {

// A block's exact integer partials in one vector: lanes 0-3 sum to its isum, 4-7 to its second
// sum (summs; 0 where a format has none). Four blocks' vectors hadd'ed twice give
// [isum 0..3 | second 0..3] (integer adds: exact in any order).
inline __m256i pack_parts(__m256i isum_parts, __m128i second_parts) {
  const __m128i f = _mm_add_epi32(_mm256_castsi256_si128(isum_parts), _mm256_extracti128_si256(isum_parts, 1));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(f), second_parts, 1);
}

// Eight f16 scales packed as u16 pairs (low half a, high half b, one dword per block) -> a and b
// as f32 (exact).
inline void f16_pairs(__m256i dw, __m256* a, __m256* b) {
  const __m256i lo = _mm256_and_si256(dw, _mm256_set1_epi32(0xffff)), hi = _mm256_srli_epi32(dw, 16);
  const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);  // [a0..7 | b0..7]
  *a = _mm256_cvtph_ps(_mm256_castsi256_si128(p));
  *b = _mm256_cvtph_ps(_mm256_extracti128_si256(p, 1));
}

// One group: lanes past the last block (k >= live) carry zero sums and zero scales, so the Fast
// updates leave those slices unchanged (fma(0, 0, acc) == acc; acc is never -0).
struct Group8 {
  int64_t b;
  int live;
  __m256i isum, second;  // exact integer sums, lane k = block b + k
  __m256 dx, d, dmin;    // activation scale, weight scales (dmin unused by IQ2_XXS)
};

template <class Sum>
struct GroupSum;

template <>
struct GroupSum<SlicedSum> {
  __m256 acc = _mm256_setzero_ps();
  void kquant(const Group8& g) {  // fast::kquant_update lane-wise
    const __m256 dall = _mm256_mul_ps(g.dx, g.d), dm = _mm256_mul_ps(g.dx, g.dmin);
    acc = _mm256_fmadd_ps(dall, _mm256_cvtepi32_ps(g.isum), _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(g.second), acc));
  }
  void iq2_xxs(const Group8& g) {  // fast::iq2_xxs_update lane-wise
    acc = _mm256_fmadd_ps(_mm256_mul_ps(g.d, g.dx), _mm256_cvtepi32_ps(g.isum), acc);
  }
  float result() const {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    return fast::tree(lanes);
  }
};

template <>
struct GroupSum<SerialSum> {
  SerialSum sum;
  struct Lanes {
    alignas(32) int32_t isum[8], second[8];
    alignas(32) float dx[8], d[8], dmin[8];
    explicit Lanes(const Group8& g) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(isum), g.isum);
      _mm256_store_si256(reinterpret_cast<__m256i*>(second), g.second);
      _mm256_store_ps(dx, g.dx), _mm256_store_ps(d, g.d), _mm256_store_ps(dmin, g.dmin);
    }
  };
  void kquant(const Group8& g) {
    const Lanes l(g);
    for (int k = 0; k < g.live; k++) sum.kquant(g.b + k, l.dx[k], l.d[k], l.dmin[k], l.isum[k], l.second[k]);
  }
  void iq2_xxs(const Group8& g) {
    const Lanes l(g);
    for (int k = 0; k < g.live; k++) sum.iq2_xxs(g.b + k, l.d[k], l.dx[k], l.isum[k]);
  }
  float result() const { return sum.result(); }
};

// Runs the row's blocks in groups of eight: parts(i) gives block i's packed partials
// (pack_parts); the weight scales are the dword at w_scales(b) (f16 d low, dmin high) and the
// activation scales the f32 at x_scales(b), each of a group's blocks a stride further on; each
// complete or last partial group goes to take(Group8). `parts` is inlined, so the main loop is
// branch-free.
template <class Parts, class Take>
[[gnu::always_inline]] inline void groups8(int64_t nb, Parts parts, const void* w_scales, int w_stride,
                                           const void* x_scales, int x_stride, Take take) {
  const auto group = [&](int64_t b, int live) __attribute__((always_inline)) {
    // Pairs are reduced as soon as they exist, so few blocks' partials are live at once.
    const auto part = [&](int k) { return k < live ? parts(b + k) : _mm256_setzero_si256(); };
    __m256i h[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
      const __m256i c0 = part(2 * k);
      h[k] = _mm256_hadd_epi32(c0, part(2 * k + 1));
    }
    const __m256i lo = _mm256_hadd_epi32(h[0], h[1]), hi = _mm256_hadd_epi32(h[2], h[3]);
    const __m256 dx = _mm256_castsi256_ps(dwords8(static_cast<const char*>(x_scales) + b * x_stride, x_stride, live));
    Group8 g{b, live, _mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31), dx, {}, {}};
    f16_pairs(dwords8(static_cast<const char*>(w_scales) + b * w_stride, w_stride, live), &g.d, &g.dmin);
    take(g);
  };
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) group(b, 8);
  if (b < nb) group(b, static_cast<int>(nb - b));
}

}  // namespace ds4::quant::detail::avx2
