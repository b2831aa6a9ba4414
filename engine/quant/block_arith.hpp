#pragma once
// Internal: the per-element float arithmetic of the dots (scale and element decodes, adds and
// multiplies with one rounding each), written once as `__host__ __device__` functions. The
// generic CPU kernels (arch/generic/) and the CUDA kernels (engine/cuda/kernels/) both call
// these, so every CPU test of the generic kernels also exercises the GPU's per-element
// arithmetic; only the parallel decomposition needs a device (docs/cuda.md §arithmetic). Each
// multiply and add is a separate IEEE-754 binary32 rounding: the host compiles with
// -ffp-contract=off and the device code uses the _rn intrinsics, which nvcc never contracts.
#include <cstdint>

#if defined(__CUDACC__)
#define DS4_HD static __host__ __device__ __forceinline__
#else
// static: like blocks.hpp, this header is compiled with and without ISA flags.
#define DS4_HD static inline
#include <cstring>
#endif

namespace ds4::quant::arith {

DS4_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
DS4_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

DS4_HD float bits_to_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// IEEE half -> float; exact for every input (subnormals, inf, NaN).
DS4_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    int e = -1;  // normalise the subnormal
    do {
      mant <<= 1;
      e++;
    } while ((mant & 0x400u) == 0);
    return bits_to_f32(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13);
  }
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | mant << 13);
  return bits_to_f32(sign | (exp + 112) << 23 | mant << 13);
}

// bfloat16 -> float: the top half of the binary32 bits (exact).
DS4_HD float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

// E8M0 exponent byte -> 2^(e-127) / 2 (GGML's "half" convention for MXFP4, whose int table
// holds doubled E2M1 values); exact, subnormal for e < 2.
DS4_HD float e8m0_to_f32_half(uint8_t e) {
  return bits_to_f32(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// Q8_0: the exact integer dot of one 32-element block (int32 cannot overflow: 32 * 128 * 128).
DS4_HD int32_t q8_0_block_isum(const int8_t* w, const int8_t* x) {
  int32_t s = 0;
  for (int j = 0; j < 32; j++) s += static_cast<int32_t>(w[j]) * static_cast<int32_t>(x[j]);
  return s;
}
// Q8_0: one block's float term, (f16(w.d) * x.d) * (float)isum, multiplied left to right.
DS4_HD float q8_0_block_term(uint16_t w_d, float x_d, int32_t isum) {
  return mul(mul(f16_to_f32(w_d), x_d), static_cast<float>(isum));
}
// F16: one element's float term, f16(w) * x.
DS4_HD float f16_term(uint16_t w, float x) { return mul(f16_to_f32(w), x); }

// The partial-sum step both dots use: the running sum plus the next term, one rounding. Terms
// enter in index order (block order for Q8_0), starting from +0.0f.
DS4_HD float accumulate(float acc, float term) { return add(acc, term); }

}  // namespace ds4::quant::arith
