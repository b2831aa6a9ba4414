// Q8_0: blocks of 32 int8 with an f16 scale; the activation for Q8_0 (and MXFP4) weights is the
// ds4 Q8_0 activation layout {f32 d; i8 q[32]} (quant.hpp). Activation quantization and the dot
// follow ds4.c exactly; the generic kernel is arch/generic/dots_generic.cpp and the SIMD ones
// (arch/x86, arch/arm) accumulate identically. The formulas and the weight quantizer:
// docs/quant.md §activation-quantization, §exact-order-of-the-integer-dots, §quantizers.
#include <cmath>

#include "engine/quant/act_quant.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / 32; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 32; j++) dst[i * 32 + j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / 32; i++) {
    const float* x = src + i * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = std::fmax(amax, std::fabs(x[j]));
    y[i].d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(y[i].d);
    for (int j = 0; j < 32; j++) {
      int v = d != 0.0f ? nearest_int(x[j] / d) : 0;
      y[i].qs[j] = static_cast<int8_t>(v > 127 ? 127 : (v < -128 ? -128 : v));
    }
  }
}

void quantize_act_q8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0Act* y = static_cast<BlockQ8_0Act*>(dst);
  for (int64_t i = 0; i < n / 32; i++) {
    const float* x = src + i * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) amax = ax;
    }
    const float d = act::q8_0_d(amax);
    const float id = act::q8_0_inverse(d);
    y[i].d = d;
    for (int j = 0; j < 32; j++) y[i].qs[j] = act::to_int8(x[j], id);
  }
}

}  // namespace ds4::quant::detail
