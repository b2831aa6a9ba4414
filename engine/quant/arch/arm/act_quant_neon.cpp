// AArch64 activation quantizers (docs/quant.md §activation-quantization), byte-identical to quantize_act_q8_0 /
// quantize_act_q8_k (q8_0.cpp, q8_k.cpp): the |x| maximum by FMAXNM (which, started from +0, skips NaN exactly as the
// generic strict `>` scan does), the same f32 divide/reciprocal/multiply, and FCVTNS, which rounds half to even like
// lrintf in the default rounding mode, then the same clamp. FCVTNS saturates at the int32 range where the generic
// int(lrintf(v)) wraps, so a block whose scaled values could leave that range (a denormal-tiny or infinite maximum:
// amax * scale not below 2^31, or NaN) is handed to the generic quantizer whole.
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "engine/quant/arch/arm/kernels_arm.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

constexpr float kInt32Limit = 2147483520.0f;  // the largest float below 2^31

// max |x[i]| over 16*k floats, +0 if all are zero or NaN.
inline float amax_of(const float* x, int n) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < n; i += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxnmvq_f32(m);
}

// 16 floats times s, rounded half to even, clamped to [-128, 127], as int8.
inline int8x16_t round16(const float* x, float32x4_t s) {
  const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
  int32x4_t q[4];
  for (int k = 0; k < 4; k++) q[k] = vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * k), s)), lo), hi);
  const int16x8_t a = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
  const int16x8_t b = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
  return vcombine_s8(vmovn_s16(a), vmovn_s16(b));
}

}  // namespace

void quantize_act_q8_0_neon(const float* src, void* dst, int64_t n) {
  BlockQ8_0Act* y = static_cast<BlockQ8_0Act*>(dst);
  for (int64_t i = 0; i < n / 32; i++) {
    const float* x = src + i * 32;
    const float amax = amax_of(x, 32);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (!(amax * id < kInt32Limit)) {
      quantize_act_q8_0(x, &y[i], 32);
      continue;
    }
    y[i].d = d;
    const float32x4_t s = vdupq_n_f32(id);
    vst1q_s8(y[i].qs, round16(x, s));
    vst1q_s8(y[i].qs + 16, round16(x + 16, s));
  }
}

void quantize_act_q8_k_neon(const float* src, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    const float amax = amax_of(x, QK_K);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    int j = 0;  // the first element of largest magnitude, as the generic scan keeps
    while (std::fabs(x[j]) != amax) j++;
    const float iscale = -127.0f / x[j];
    if (!(amax * std::fabs(iscale) < kInt32Limit)) {
      quantize_act_q8_k(x, &y[b], QK_K);
      continue;
    }
    const float32x4_t s = vdupq_n_f32(iscale);
    for (int k = 0; k < QK_K / 16; k++) {
      const int8x16_t q = round16(x + 16 * k, s);
      vst1q_s8(y[b].qs + 16 * k, q);
      y[b].bsums[k] = static_cast<int16_t>(vaddlvq_s8(q));
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace ds4::quant::detail
