#pragma once
// Internal: the format tables the integer block sums read (IQ2_XXS grid and signs, MXFP4 values,
// Q4_K's packed scales), as `__host__ __device__` look-ups so block_sums.hpp runs unchanged on
// the CPU and in the CUDA kernels. The host reads the tables of iq2_tables.cpp and mxfp4.cpp;
// device code reads `__device__` copies built from the same value lists (iq2_grid.inc,
// DS4_MXFP4_VALUES). Global rather than `__constant__` memory: the 32 lanes of a warp look up
// different entries, which the constant cache would serialise.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

// The doubled E2M1 values of MXFP4 (GGML's kvalues_mxfp4): mxfp4.cpp's kMxfp4Values and the
// device copy below.
#define DS4_MXFP4_VALUES 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12

namespace ds4::quant::detail {

#if defined(__CUDACC__)
static __device__ const uint64_t kIq2xxsGridDevice[256] = {
#include "engine/quant/iq2_grid.inc"
};
static __device__ const int8_t kMxfp4ValuesDevice[16] = {DS4_MXFP4_VALUES};
#endif

// Grid point g of IQ2_XXS: element j is byte j (little endian).
DS4_HD uint64_t iq2xxs_grid(uint32_t g) {
#if defined(__CUDA_ARCH__)
  return kIq2xxsGridDevice[g];
#else
  return kIq2xxsGrid[g];
#endif
}

// IQ2 sign pattern of 7 stored bits: bit j set = element j negative, bit 7 the parity that makes
// the count of negatives even (the definition kIq2Signs.mask is built from; computed, not read).
DS4_HD uint32_t iq2_sign_mask(uint32_t s7) {
  uint32_t p = s7 ^ (s7 >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return s7 | (p & 1u) << 7;
}

// MXFP4 element value of nibble q (doubled E2M1).
DS4_HD int32_t mxfp4_value(uint32_t q) {
#if defined(__CUDA_ARCH__)
  return kMxfp4ValuesDevice[q];
#else
  return kMxfp4Values[q];
#endif
}

// Q4_K: scale and min of sub-block j (0..7) from the 12 packed bytes (6 bits each).
DS4_HD void q4_k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

}  // namespace ds4::quant::detail
