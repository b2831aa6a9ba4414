#pragma once
// Internal: the float steps of the Fast order (docs/arithmetic.md §slices, §quantized-dot,
// §float-dot), written once as `__host__ __device__` functions. The generic Fast kernels
// (arch/generic/dots_fast_generic.cpp) are built from them; the AVX2, NEON and CUDA kernels call
// them for every float operation they do not vectorise, and where they vectorise (the slices as
// SIMD lanes) they take the same operations lane by lane. So a test of the generic kernels also
// tests the GPU's per-element arithmetic, and every implementation returns the same bits.
//
// The shape: block b of a row belongs to slice b mod kSlices (slice_of); each slice has one
// binary32 accumulator starting at +0.0 that takes its blocks in ascending order through the
// format's block update (one FMA, written explicitly); the slices meet in the fixed pairwise
// tree(). So eight consecutive blocks are one block of every slice: a CPU reads the row in one
// sequential stream with the slices as SIMD lanes, a warp reads eight adjacent blocks per step.
// Integer block sums are exact in any order, so only these steps are shared.
#include <cmath>
#include <cstdint>

#include "engine/quant/block_arith.hpp"

namespace ds4::quant::fast {

inline constexpr int kSlices = 8;

// The slice of block b: slice s holds blocks s, s + 8, s + 16, ... (empty when s >= nb).
DS4_HD int slice_of(int64_t b) { return static_cast<int>(b % kSlices); }

// One rounding of a*b+c (never left to compiler contraction: -ffp-contract=off, --fmad=false).
DS4_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// The fixed pairwise tree over the eight slice partials.
DS4_HD float tree(const float p[kSlices]) {
  using arith::add;
  return add(add(add(p[0], p[1]), add(p[2], p[3])), add(add(p[4], p[5]), add(p[6], p[7])));
}

// int32 -> binary32, round to nearest even (exact below 2^24).
DS4_HD float i2f(int32_t i) {
#if defined(__CUDA_ARCH__)
  return __int2float_rn(i);
#else
  return static_cast<float>(i);
#endif
}

// ---- Block updates (docs/arithmetic.md §quantized-dot): acc is the block's slice accumulator.

// Q8_0 and MXFP4: `scale` is the weight block's scale as f32 (f16 d, or E8M0/2: both exact),
// dx the activation block's scale.
DS4_HD float blocks32_update(float acc, float scale, float dx, int32_t isum) {
  return fma(arith::mul(scale, dx), i2f(isum), acc);
}
// Q2_K and Q4_K: d, dmin the weight block's f16 scales as f32, dx the Q8_K activation scale.
DS4_HD float kquant_update(float acc, float dx, float d, float dmin, int32_t isum, int32_t summs) {
  const float dall = arith::mul(dx, d), dm = arith::mul(dx, dmin);
  return fma(dall, i2f(isum), fma(-dm, i2f(summs), acc));
}
// IQ2_XXS: d the weight block's f16 scale as f32; bsum the block's scaled integer sum.
DS4_HD float iq2_xxs_update(float acc, float d, float dx, int32_t bsum) {
  return fma(arith::mul(d, dx), i2f(bsum), acc);
}
// IQ2_XXS's grid holds 8x the values: one exact-power scaling after the tree.
DS4_HD float iq2_xxs_finish(float r) { return arith::mul(0.125f, r); }

// ---- Float dot (docs/arithmetic.md §float-dot): blocks of 32 products p[i] = fl(w[i]*x[i]),
// reduced in place by halving (i with i+16, then i+8, 4, 2, 1); a short last block is padded with
// +0.0 products. The block value enters its slice with fl(acc + value).
inline constexpr int kFloatBlock = 32;
DS4_HD float block_tree32(float p[kFloatBlock]) {
  for (int h = kFloatBlock / 2; h >= 1; h /= 2)
    for (int i = 0; i < h; i++) p[i] = arith::add(p[i], p[i + h]);
  return p[0];
}

}  // namespace ds4::quant::fast
