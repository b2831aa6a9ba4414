#pragma once
// Internal: the two float orders in which a dot kernel's exact integer block sums become its
// result, as interchangeable policies. A SIMD kernel of any architecture computes the integer
// sums its own way, hands each block to the policy in ascending block order, and returns
// result(); so one kernel body serves both orders and the float steps are written once. A
// default-constructed policy is an empty sum.
//   SerialSum  -- Order::Exact: ds4's single running sum (the format files' documented order).
//   SlicedSum  -- Order::Fast: eight slice accumulators and the tree (docs/arithmetic.md §slices),
//                 with the block updates of fast_order.hpp.
// Compiled into files with and without ISA flags; everything is static inline (blocks.hpp).
#include <cstdint>

#include "engine/quant/fast_order.hpp"

namespace ds4::quant::detail {

struct SerialSum {
  float sum = 0.0f;
  void blocks32(int64_t /*b*/, float scale, float dx, int32_t isum) { sum += scale * dx * static_cast<float>(isum); }
  void kquant(int64_t /*b*/, float dx, float d, float dmin, int32_t isum, int32_t summs) {
    const float dall = dx * d, dm = dx * dmin;
    sum += dall * static_cast<float>(isum) - dm * static_cast<float>(summs);
  }
  void iq2_xxs(int64_t /*b*/, float d, float dx, int32_t bsum) { sum += d * dx * static_cast<float>(bsum); }
  float result() const { return sum; }
};

// Blocks must arrive in ascending order (each slice then takes its blocks in order): block b goes
// to slice b mod 8. For the 256-element formats the integer work per block dwarfs the indexed
// accumulator (NEON); the AVX2 kernels vectorise the slices instead, eight blocks per step
// (x86/q8_0_avx2.cpp, x86/block_groups.hpp).
struct SlicedSum {
  float acc[fast::kSlices] = {};
  void blocks32(int64_t b, float scale, float dx, int32_t isum) {
    float& a = acc[fast::slice_of(b)];
    a = fast::blocks32_update(a, scale, dx, isum);
  }
  void kquant(int64_t b, float dx, float d, float dmin, int32_t isum, int32_t summs) {
    float& a = acc[fast::slice_of(b)];
    a = fast::kquant_update(a, dx, d, dmin, isum, summs);
  }
  void iq2_xxs(int64_t b, float d, float dx, int32_t bsum) {
    float& a = acc[fast::slice_of(b)];
    a = fast::iq2_xxs_update(a, d, dx, bsum);
  }
  float result() const { return fast::tree(acc); }
};

}  // namespace ds4::quant::detail
