// AArch64 dots for the plain float weights, in two orders (like arch/x86/float_avx2.cpp):
//  * Fast (dot_*_neon, dot_*_multi_neon): docs/arithmetic.md §float-dot, bit-identical to the
//    generic Fast kernels (dots_fast_generic.cpp): each block of 32 products in eight float32x4
//    vectors, reduced by the halving tree (four blocks finished together, one per lane), the
//    blocks into their slice's accumulator with a plain add, then the slice tree. No FMA: the
//    contract forms every product and sum with one rounding each.
//  * exact order (dot_*_neon_exact): the generic kernels' f32 (F16/BF16) or f64 (F32) products --
//    a product of two floats rounds the same in a SIMD lane -- added one by one in index order,
//    bit-identical to the generic kernels while conversions and multiplies run 4 wide.
//  * exact order for several activation rows (dot_*_multi_neon_exact, quant.hpp DotMultiFn): each
//    4-weight group converted once, then per row the exact kernel's products and index-order adds.
// F16 -> f32 (FCVTL) and BF16 -> f32 (a 16-bit shift) are exact.
#include <arm_neon.h>

#include "engine/quant/arch/arm/kernels_arm.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"

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

// ---- Fast order (docs/arithmetic.md §float-dot).

// The halvings of block b down to four values (i with i+16, i+8, i+4): the 32 products sit in
// v[k] = elements 4k..4k+3; a short last block is padded with +0.0 products, as the contract says.
template <class Weights>
float32x4_t block_quarter(Weights w, const float* x, int64_t n, int64_t b) {
  const int64_t i0 = b * fast::kFloatBlock;
  float32x4_t v[8];
  if (i0 + fast::kFloatBlock <= n) {
    for (int k = 0; k < 8; k++) v[k] = vmulq_f32(w.load4(i0 + 4 * k), vld1q_f32(x + i0 + 4 * k));
  } else {
    float p[fast::kFloatBlock];
    for (int i = 0; i < fast::kFloatBlock; i++) p[i] = i0 + i < n ? w.at(i0 + i) * x[i0 + i] : 0.0f;
    for (int k = 0; k < 8; k++) v[k] = vld1q_f32(p + 4 * k);
  }
  for (int k = 0; k < 4; k++) v[k] = vaddq_f32(v[k], v[k + 4]);  // i + 16
  for (int k = 0; k < 2; k++) v[k] = vaddq_f32(v[k], v[k + 2]);  // i + 8
  return vaddq_f32(v[0], v[1]);                                  // i + 4
}

// The last two halvings (i with i+2, then i+1) of four blocks at once: u[k] holds block k's four
// values; lane k of the result is block k's value. Each add pairs the values the scalar tree
// pairs (an add is commutative); only the lanes they sit in differ.
inline float32x4_t finish4(const float32x4_t u[4]) {
  const auto lo = [](float32x4_t a, float32x4_t b) { return vcombine_f32(vget_low_f32(a), vget_low_f32(b)); };
  const auto hi = [](float32x4_t a, float32x4_t b) { return vcombine_f32(vget_high_f32(a), vget_high_f32(b)); };
  const float32x4_t h01 = vaddq_f32(lo(u[0], u[1]), hi(u[0], u[1]));  // [0: v0+v2, v1+v3 | 1: ...]
  const float32x4_t h23 = vaddq_f32(lo(u[2], u[3]), hi(u[2], u[3]));
  return vpaddq_f32(h01, h23);  // adjacent pairs: (v0+v2) + (v1+v3) of blocks 0, 1, 2, 3
}

// The slice tree, lane by lane, over eight vectors of slice partials.
inline float32x4_t tree_lanes(const float32x4_t p[fast::kSlices]) {
  return vaddq_f32(vaddq_f32(vaddq_f32(p[0], p[1]), vaddq_f32(p[2], p[3])),
                   vaddq_f32(vaddq_f32(p[4], p[5]), vaddq_f32(p[6], p[7])));
}

// One row: block b belongs to slice b mod 8; slices 0..3 are the lanes of acc[0], 4..7 those of
// acc[1], so step i takes blocks 8i..8i+7 in row order. Past the row's end (the last step when 8
// does not divide the block count) a lane gets the block value +0.0, which leaves its
// accumulator unchanged (it is never -0: it starts at +0 and x + -x rounds to +0).
template <class Weights>
float dot_fast(Weights w, const float* x, int64_t n) {
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
    for (int h = 0; h < 2; h++) {
      float32x4_t u[4];
      for (int k = 0; k < 4; k++) {
        const int64_t b = b0 + 4 * h + k;
        u[k] = b < nb ? block_quarter(w, x, n, b) : vdupq_n_f32(0.0f);
      }
      acc[h] = vaddq_f32(acc[h], finish4(u));
    }
  }
  float lanes[fast::kSlices];
  vst1q_f32(lanes, acc[0]);
  vst1q_f32(lanes + 4, acc[1]);
  return fast::tree(lanes);
}

// Up to four activation rows at once: lane t of every vector belongs to row t (the four rows'
// values of one block come out of finish4 together), each slice has its own vector, and the tree
// runs lane-wise -- per row, the steps of dot_fast. Lanes past the last row repeat it and are
// dropped; a pass of one row runs dot_fast itself.
template <class Weights>
void dot_fast_multi(Weights w, const uint8_t* act, size_t stride, int n_act, int64_t n, float* out) {
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  for (int t0 = 0; t0 < n_act; t0 += 4) {
    const int nt = n_act - t0 < 4 ? n_act - t0 : 4;
    if (nt == 1) {
      out[t0] = dot_fast(w, reinterpret_cast<const float*>(act + size_t(t0) * stride), n);
      continue;
    }
    const float* x[4];
    for (int t = 0; t < 4; t++)
      x[t] = reinterpret_cast<const float*>(act + size_t(t0 + (t < nt ? t : nt - 1)) * stride);
    float32x4_t acc[fast::kSlices];
    for (float32x4_t& a : acc) a = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {  // in row order; block b goes to slice b mod 8
      float32x4_t u[4];
      for (int t = 0; t < 4; t++) u[t] = block_quarter(w, x[t], n, b);
      acc[fast::slice_of(b)] = vaddq_f32(acc[fast::slice_of(b)], finish4(u));
    }
    float lanes[4];
    vst1q_f32(lanes, tree_lanes(acc));
    for (int t = 0; t < nt; t++) out[t0 + t] = lanes[t];
  }
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

float dot_f32_neon(const void* w, const void* act, int64_t n) {
  return dot_fast(F32Weights{floats(w)}, floats(act), n);
}
float dot_f16_neon(const void* w, const void* act, int64_t n) {
  return dot_fast(F16Weights{halves(w)}, floats(act), n);
}
float dot_bf16_neon(const void* w, const void* act, int64_t n) {
  return dot_fast(BF16Weights{halves(w)}, floats(act), n);
}
void dot_f32_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(F32Weights{floats(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
}
void dot_f16_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(F16Weights{halves(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
}
void dot_bf16_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(BF16Weights{halves(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
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
