#pragma once
// Internal: each format's Fast-order block step (docs/arithmetic.md §quantized-dot, §float-dot)
// as one `__host__ __device__` description: the block types, the exact integer sums of a range
// of the block's units (block_sums.hpp), the block update into the slice accumulator
// (fast_order.hpp) and the step after the tree. The generic CPU Fast dots
// (arch/generic/dots_fast_generic.cpp) and the CUDA kernels (engine/cuda/kernels/) are the same
// steps in two decompositions, so a CPU test of one covers the arithmetic of the other.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/block_sums.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::quant::fast {

using IntSums = detail::KquantSums;  // {isum, summs}; summs is 0 where a format has no mins

// Quantized formats: kElems elements per block, kUnits units to split the integer work by.
struct Mxfp4Block {
  using Weight = detail::BlockMXFP4;
  using Act = detail::BlockQ8_0Act;
  static constexpr int kElems = 32, kUnits = detail::kMxfp4Units;
  DS4_HD IntSums sums(const Weight& w, const Act& a, int first, int count) {
    return {detail::mxfp4_block_isum(w, a, first, count), 0};
  }
  DS4_HD float update(float acc, const Weight& w, const Act& a, IntSums s) {
    return blocks32_update(acc, arith::e8m0_to_f32_half(w.e), a.d, s.isum);
  }
  DS4_HD float finish(float r) { return r; }
};

struct Q2KBlock {
  using Weight = detail::BlockQ2_K;
  using Act = detail::BlockQ8_K;
  static constexpr int kElems = detail::QK_K, kUnits = detail::kQ2KUnits;
  DS4_HD IntSums sums(const Weight& w, const Act& a, int first, int count) {
    return detail::q2_k_block_sums(w, a, first, count);
  }
  DS4_HD float update(float acc, const Weight& w, const Act& a, IntSums s) {
    return kquant_update(acc, a.d, arith::f16_to_f32(w.d), arith::f16_to_f32(w.dmin), s.isum, s.summs);
  }
  DS4_HD float finish(float r) { return r; }
};

struct Q4KBlock {
  using Weight = detail::BlockQ4_K;
  using Act = detail::BlockQ8_K;
  static constexpr int kElems = detail::QK_K, kUnits = detail::kQ4KUnits;
  DS4_HD IntSums sums(const Weight& w, const Act& a, int first, int count) {
    return detail::q4_k_block_sums(w, a, first, count);
  }
  DS4_HD float update(float acc, const Weight& w, const Act& a, IntSums s) {
    return kquant_update(acc, a.d, arith::f16_to_f32(w.d), arith::f16_to_f32(w.dmin), s.isum, s.summs);
  }
  DS4_HD float finish(float r) { return r; }
};

struct Iq2XxsBlock {
  using Weight = detail::BlockIQ2_XXS;
  using Act = detail::BlockQ8_K;
  static constexpr int kElems = detail::QK_K, kUnits = detail::kIq2XxsUnits;
  DS4_HD IntSums sums(const Weight& w, const Act& a, int first, int count) {
    return {detail::iq2_xxs_block_sum(w, a, first, count), 0};
  }
  DS4_HD float update(float acc, const Weight& w, const Act& a, IntSums s) {
    return iq2_xxs_update(acc, arith::f16_to_f32(w.d), a.d, s.isum);
  }
  DS4_HD float finish(float r) { return iq2_xxs_finish(r); }
};

// Float formats: the exact conversion of one stored weight element to binary32.
struct F32Elem {
  using T = float;
  DS4_HD float load(T v) { return v; }
};
struct F16Elem {
  using T = uint16_t;
  DS4_HD float load(T h) { return arith::f16_to_f32(h); }
};
struct Bf16Elem {
  using T = uint16_t;
  DS4_HD float load(T h) { return arith::bf16_to_f32(h); }
};

}  // namespace ds4::quant::fast
