// AArch64 dots for the plain float weights, in two flavours (like arch/x86/float_avx2.cpp):
//  * fast (dot_*_neon): four 4-wide FMA accumulators, so the sum is reordered relative to the
//    generic kernels;
//  * exact order (dot_*_neon_exact): the generic kernels' f32 (F16/BF16) or f64 (F32) products --
//    a product of two floats rounds the same in a SIMD lane -- added one by one in index order,
//    bit-identical to the generic kernels while conversions and multiplies run 4 wide.
//  * exact order for several activation rows (dot_*_multi_neon_exact, quant.hpp DotMultiFn): each
//    4-weight group converted once, then per row the exact kernel's products and index-order adds.
// F16 -> f32 (FCVTL) and BF16 -> f32 (a 16-bit shift) are exact.
#include <arm_neon.h>

#include "engine/quant/arch/arm/kernels_arm.hpp"
#include "engine/quant/blocks.hpp"

namespace ds4::quant::detail {
namespace {

struct F32Weights {
  const float* a;
  float32x4_t load4(int64_t i) const { return vld1q_f32(a + i); }
  float at(int64_t i) const { return a[i]; }
};

struct F16Weights {
  const uint16_t* h;
  float32x4_t load4(int64_t i) const { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + i))); }
  float at(int64_t i) const { return f16_to_f32(h[i]); }
};

struct BF16Weights {
  const uint16_t* h;
  float32x4_t load4(int64_t i) const { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(h + i), 16)); }
  float at(int64_t i) const { return bf16_to_f32(h[i]); }
};

template <class Weights>
float dot_fma(Weights w, const float* x, int64_t n) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = vfmaq_f32(acc0, w.load4(i), vld1q_f32(x + i));
    acc1 = vfmaq_f32(acc1, w.load4(i + 4), vld1q_f32(x + i + 4));
    acc2 = vfmaq_f32(acc2, w.load4(i + 8), vld1q_f32(x + i + 8));
    acc3 = vfmaq_f32(acc3, w.load4(i + 12), vld1q_f32(x + i + 12));
  }
  for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, w.load4(i), vld1q_f32(x + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
  for (; i < n; i++) sum += w.at(i) * x[i];
  return sum;
}

// f32 products, f32 sum in index order (F16/BF16: ds4's dot_f16_row order).
template <class Weights>
float dot_exact_f32_sum(Weights w, const float* x, int64_t n) {
  float acc = 0.0f;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t p = vmulq_f32(w.load4(i), vld1q_f32(x + i));
    acc += vgetq_lane_f32(p, 0);
    acc += vgetq_lane_f32(p, 1);
    acc += vgetq_lane_f32(p, 2);
    acc += vgetq_lane_f32(p, 3);
  }
  for (; i < n; i++) acc += w.at(i) * x[i];
  return acc;
}

// dot_exact_f32_sum for up to 8 activation rows (act + t * stride), weights converted once.
template <class Weights>
void dot_exact_f32_sum_multi(Weights w, const uint8_t* act, size_t stride, int n_act, int64_t n, float* out) {
  const float* x[8];
  float acc[8] = {};
  for (int t = 0; t < n_act; t++) x[t] = reinterpret_cast<const float*>(act + size_t(t) * stride);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t wv = w.load4(i);
    for (int t = 0; t < n_act; t++) {
      const float32x4_t p = vmulq_f32(wv, vld1q_f32(x[t] + i));
      acc[t] += vgetq_lane_f32(p, 0);
      acc[t] += vgetq_lane_f32(p, 1);
      acc[t] += vgetq_lane_f32(p, 2);
      acc[t] += vgetq_lane_f32(p, 3);
    }
  }
  for (; i < n; i++) {
    const float wi = w.at(i);
    for (int t = 0; t < n_act; t++) acc[t] += wi * x[t][i];
  }
  for (int t = 0; t < n_act; t++) out[t] = acc[t];
}

template <class Weights>
void multi_in_groups_of_8(Weights w, const void* act, size_t stride, int n_act, int64_t n, float* out) {
  const auto* a = static_cast<const uint8_t*>(act);
  for (int t0 = 0; t0 < n_act; t0 += 8)
    dot_exact_f32_sum_multi(w, a + size_t(t0) * stride, stride, n_act - t0 < 8 ? n_act - t0 : 8, n, out + t0);
}

const float* floats(const void* p) { return static_cast<const float*>(p); }
const uint16_t* halves(const void* p) { return static_cast<const uint16_t*>(p); }

}  // namespace

float dot_f32_neon(const void* w, const void* act, int64_t n) { return dot_fma(F32Weights{floats(w)}, floats(act), n); }
float dot_f16_neon(const void* w, const void* act, int64_t n) { return dot_fma(F16Weights{halves(w)}, floats(act), n); }
float dot_bf16_neon(const void* w, const void* act, int64_t n) {
  return dot_fma(BF16Weights{halves(w)}, floats(act), n);
}

float dot_f16_neon_exact(const void* w, const void* act, int64_t n) {
  return dot_exact_f32_sum(F16Weights{halves(w)}, floats(act), n);
}
float dot_bf16_neon_exact(const void* w, const void* act, int64_t n) {
  return dot_exact_f32_sum(BF16Weights{halves(w)}, floats(act), n);
}

void dot_f16_multi_neon_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  multi_in_groups_of_8(F16Weights{halves(w)}, act, act_stride, n_act, n, out);
}
void dot_bf16_multi_neon_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  multi_in_groups_of_8(BF16Weights{halves(w)}, act, act_stride, n_act, n, out);
}

// F32 (ds4's matvec_f32_worker): f64 products of the widened operands, f64 sum in index order.
float dot_f32_neon_exact(const void* w, const void* act, int64_t n) {
  const float* a = floats(w);
  const float* x = floats(act);
  double acc = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t va = vld1q_f32(a + i), vx = vld1q_f32(x + i);
    const float64x2_t lo = vmulq_f64(vcvt_f64_f32(vget_low_f32(va)), vcvt_f64_f32(vget_low_f32(vx)));
    const float64x2_t hi = vmulq_f64(vcvt_high_f64_f32(va), vcvt_high_f64_f32(vx));
    acc += vgetq_lane_f64(lo, 0);
    acc += vgetq_lane_f64(lo, 1);
    acc += vgetq_lane_f64(hi, 0);
    acc += vgetq_lane_f64(hi, 1);
  }
  for (; i < n; i++) acc += static_cast<double>(a[i]) * static_cast<double>(x[i]);
  return static_cast<float>(acc);
}

}  // namespace ds4::quant::detail
