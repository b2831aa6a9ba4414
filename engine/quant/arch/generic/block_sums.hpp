#pragma once
// Internal: the exact integer part of one weight block against its activation block, per
// format, in scalar C++. Both generic dot orders (dots_generic.cpp: Exact; dots_fast_generic.cpp:
// Fast) are these sums plus their own float steps, so the two orders differ only where
// docs/arithmetic.md §quantized-dot says they do. Integer sums are exact, so every SIMD kernel's
// lane split of them gives the same integers.
#include <cstdint>
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

struct KquantSums {
  int32_t isum, summs;  // Σ scale_j · <levels_j, q8_j>,  Σ min_j · bsum_j
};

static inline KquantSums q2_k_block_sums(const BlockQ2_K& x, const BlockQ8_K& y) {
  const uint8_t* sc = x.scales;
  KquantSums r{0, 0};
  for (int j = 0; j < 16; j++) r.summs += y.bsums[j] * (sc[j] >> 4);
  const uint8_t* q2 = x.qs;
  const int8_t* q8 = y.qs;
  int is = 0;
  for (int half = 0; half < 2; half++) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; part++) {  // 16 elements each, two sub-blocks per shift
        int s = 0;
        for (int l = 0; l < 16; l++) s += q8[l] * ((q2[part * 16 + l] >> shift) & 3);
        r.isum += (sc[is++] & 15) * s;
        q8 += 16;
      }
    }
    q2 += 32;
  }
  return r;
}

static inline KquantSums q4_k_block_sums(const BlockQ4_K& x, const BlockQ8_K& y) {
  KquantSums r{0, 0};
  uint8_t sc8[8], m8[8];
  unpack_q4_k_scales(x.scales, sc8, m8);
  for (int j = 0; j < 8; j++) {
    r.summs += m8[j] * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
    const uint8_t* q = x.qs + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    const int8_t* q8 = y.qs + 32 * j;
    int s = 0;
    for (int l = 0; l < 32; l++) s += q8[l] * ((q[l] >> shift) & 15);
    r.isum += sc8[j] * s;
  }
  return r;
}

// Σ over the eight groups of (2s+1) · <signed grid, q8>.
static inline int32_t iq2_xxs_block_sum(const BlockIQ2_XXS& x, const BlockQ8_K& y) {
  const int8_t* q8 = y.qs;
  int32_t bsum = 0;
  for (int ib = 0; ib < 8; ib++) {
    uint32_t aux[2];
    std::memcpy(aux, x.qs + 4 * ib, 8);
    int32_t sumi = 0;
    for (int l = 0; l < 4; l++) {
      const uint64_t grid = kIq2xxsGrid[(aux[0] >> (8 * l)) & 255];
      const uint8_t signs = kIq2Signs.mask[(aux[1] >> (7 * l)) & 127];
      for (int j = 0; j < 8; j++) {
        const int g = static_cast<int>((grid >> (8 * j)) & 255);
        sumi += ((signs >> j) & 1 ? -g : g) * q8[j];
      }
      q8 += 8;
    }
    bsum += sumi * static_cast<int32_t>(2 * (aux[1] >> 28) + 1);
  }
  return bsum;
}

static inline int32_t mxfp4_block_isum(const BlockMXFP4& w, const BlockQ8_0Act& x) {
  int32_t isum = 0;
  for (int j = 0; j < 16; j++) {
    isum += kMxfp4Values[w.qs[j] & 15] * x.qs[j];
    isum += kMxfp4Values[w.qs[j] >> 4] * x.qs[j + 16];
  }
  return isum;
}

}  // namespace ds4::quant::detail
