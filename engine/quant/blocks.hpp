#pragma once
// Internal: GGUF block layouts, half/bfloat conversions and the activation block layouts shared
// by the formats and the kernels of every architecture (arch/). Not part of the public interface (use quant.hpp).
// The helpers are `static inline` on purpose: this header is compiled both with and without
// ISA flags (-mavx2, +dotprod), and internal linkage keeps the linker from picking an ISA-flagged copy for the
// portable code.
#include <cstdint>
#include <cstring>

#include "engine/quant/block_arith.hpp"

namespace ds4::quant::detail {

constexpr int QK_K = 256;

struct BlockQ8_0 {  // weights, GGML layout
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ8_0Act {  // activations, ds4 layout: the scale stays f32
  float d;
  int8_t qs[32];
};
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];  // low nibble scale, high nibble min
  uint8_t qs[QK_K / 4];
  uint16_t d, dmin;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[QK_K / 2];
};
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[QK_K / 8];
};
struct BlockMXFP4 {
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_0Act) == 36 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ4_K) == 144 && sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockMXFP4) == 17);

static inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// IEEE half -> float; exact for every input. One definition shared with the CUDA kernels.
static inline float f16_to_f32(uint16_t h) { return arith::f16_to_f32(h); }

// float -> IEEE half, round to nearest even (what F16C and ds4's software path do).
uint16_t f32_to_f16(float f);

static inline float bf16_to_f32(uint16_t h) { return arith::bf16_to_f32(h); }
// float -> bfloat16, round to nearest even; NaN stays a quiet NaN (GGML's rule).
static inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

// E8M0 exponent byte -> 2^(e-127) / 2 (see arith::e8m0_to_f32_half).
static inline float e8m0_to_f32_half(uint8_t e) { return arith::e8m0_to_f32_half(e); }

// Round half to even, as lrintf in the default rounding mode.
int nearest_int(float x);

}  // namespace ds4::quant::detail
