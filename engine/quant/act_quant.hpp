#pragma once
// Internal: the per-element steps of the Q8_0 and Q8_K activation quantizers
// (docs/quant.md §activation-quantization) as `__host__ __device__` functions, called by the CPU
// quantizers (q8_0.cpp, q8_k.cpp) and the CUDA kernels (engine/cuda/kernels/act_quant.cuh), so
// both scale and round with the same operations: a correctly rounded divide for the scales,
// one multiply by the reciprocal per element, round half to even, clamp to [-128, 127].
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace ds4::quant::act {

// |x| (clears the sign bit, as fabsf).
DS4_HD float abs(float x) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(__float_as_uint(x) & 0x7fffffffu);
#else
  return std::fabs(x);
#endif
}

// lrintf(x) as an int: round half to even. Finite values reach this only within about 127.0001
// in magnitude (the scales make |x * scale| <= 127 up to rounding); NaN and infinities (a block
// whose max |x| is below about 4e-37 makes the scale inf) give 0 on the device, as x86's lrintf
// cast to int does (AArch64's saturating lrintf gives -1 for +inf).
DS4_HD int round_to_int(float x) {
#if defined(__CUDA_ARCH__)
  return abs(x) < 2147483648.0f ? __float2int_rn(x) : 0;
#else
  return static_cast<int>(std::lrintf(x));
#endif
}

// One quantized element: lrintf(x * scale) clamped to [-128, 127].
DS4_HD int8_t to_int8(float x, float scale) {
  const int v = round_to_int(arith::mul(x, scale));
  return static_cast<int8_t>(v > 127 ? 127 : (v < -128 ? -128 : v));
}

// Q8_0: d = amax / 127, the element scale id = 1 / d (0 when d is 0).
DS4_HD float q8_0_d(float amax) { return fast::div(amax, 127.0f); }
DS4_HD float q8_0_inverse(float d) { return d != 0.0f ? fast::div(1.0f, d) : 0.0f; }

// Q8_K: iscale = -127 / max (max: the signed element of largest magnitude), d = 1 / iscale.
DS4_HD float q8_k_iscale(float max) { return fast::div(-127.0f, max); }
DS4_HD float q8_k_d(float iscale) { return fast::div(1.0f, iscale); }

}  // namespace ds4::quant::act
