#pragma once
// Internal: the exact integer part of one weight block against its activation block, per
// format, as `__host__ __device__` functions. The generic CPU dots of both orders
// (arch/generic/dots_generic.cpp: Exact; dots_fast_generic.cpp: Fast) and the CUDA kernels
// (engine/cuda/kernels/matvec_blocks.cuh) call these same functions, so the two orders differ
// only where docs/arithmetic.md §quantized-dot says they do, and the CPU tests run the device's
// integer code. Each sum takes a range of the block's units (sub-blocks, groups or bytes) so a
// CUDA lane can do part of a block; integer sums are exact, so any split of the units adds up to
// the whole-block sums the CPU computes in one call.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/table_lookup.hpp"

namespace ds4::quant::detail {

struct KquantSums {
  int32_t isum, summs;  // Σ scale_j · <levels_j, q8_j>,  Σ min_j · bsum_j
};

// Q2_K: units are the 16 sub-blocks of 16 elements. Sub-block `is` has 4-bit scale/min byte
// scales[is], its levels at bit 2 * ((is % 8) / 2) of qs[32 * (is / 8) + 16 * (is % 2) + l].
constexpr int kQ2KUnits = 16;
DS4_HD KquantSums q2_k_block_sums(const BlockQ2_K& x, const BlockQ8_K& y, int first = 0, int count = kQ2KUnits) {
  KquantSums r{0, 0};
  for (int is = first; is < first + count; is++) {
    const int sc = x.scales[is];
    r.summs += y.bsums[is] * (sc >> 4);
    const uint8_t* q2 = x.qs + 32 * (is / 8) + 16 * (is % 2);
    const int shift = 2 * ((is % 8) / 2);
    const int8_t* q8 = y.qs + 16 * is;
    int32_t s = 0;
    for (int l = 0; l < 16; l++) s += q8[l] * ((q2[l] >> shift) & 3);
    r.isum += (sc & 15) * s;
  }
  return r;
}

// Q4_K: units are the 8 sub-blocks of 32 elements (6-bit scale and min each).
constexpr int kQ4KUnits = 8;
DS4_HD KquantSums q4_k_block_sums(const BlockQ4_K& x, const BlockQ8_K& y, int first = 0, int count = kQ4KUnits) {
  KquantSums r{0, 0};
  for (int j = first; j < first + count; j++) {
    int sc, m;
    q4_k_scale_min(x.scales, j, sc, m);
    r.summs += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
    const uint8_t* q = x.qs + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    const int8_t* q8 = y.qs + 32 * j;
    int32_t s = 0;
    for (int l = 0; l < 32; l++) s += q8[l] * ((q[l] >> shift) & 15);
    r.isum += sc * s;
  }
  return r;
}

// IQ2_XXS: units are the 8 groups of 32 elements; the sum is Σ (2s+1) · <signed grid, q8>.
constexpr int kIq2XxsUnits = 8;
DS4_HD int32_t iq2_xxs_block_sum(const BlockIQ2_XXS& x, const BlockQ8_K& y, int first = 0, int count = kIq2XxsUnits) {
  int32_t bsum = 0;
  for (int ib = first; ib < first + count; ib++) {
    const uint16_t* q = x.qs + 4 * ib;  // little endian: two 32-bit words
    const uint32_t aux0 = q[0] | static_cast<uint32_t>(q[1]) << 16;
    const uint32_t aux1 = q[2] | static_cast<uint32_t>(q[3]) << 16;
    const int8_t* q8 = y.qs + 32 * ib;
    int32_t sumi = 0;
    for (int l = 0; l < 4; l++) {
      const uint64_t grid = iq2xxs_grid((aux0 >> (8 * l)) & 255);
      const uint32_t signs = iq2_sign_mask((aux1 >> (7 * l)) & 127);
      for (int j = 0; j < 8; j++) {
        const int g = static_cast<int>((grid >> (8 * j)) & 255);
        sumi += ((signs >> j) & 1 ? -g : g) * q8[8 * l + j];
      }
    }
    bsum += sumi * static_cast<int32_t>(2 * (aux1 >> 28) + 1);
  }
  return bsum;
}

// MXFP4: units are the 16 bytes; byte j holds element j (low nibble) and element j + 16 (high).
constexpr int kMxfp4Units = 16;
DS4_HD int32_t mxfp4_block_isum(const BlockMXFP4& w, const BlockQ8_0Act& x, int first = 0, int count = kMxfp4Units) {
  int32_t isum = 0;
  for (int j = first; j < first + count; j++) {
    isum += mxfp4_value(w.qs[j] & 15) * x.qs[j];
    isum += mxfp4_value(w.qs[j] >> 4) * x.qs[j + 16];
  }
  return isum;
}

}  // namespace ds4::quant::detail
