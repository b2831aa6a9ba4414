// AArch64 NEON implementations of the order-preserving kernels (ordered_simd.hpp), the
// counterparts of arch/x86/ordered_avx2.cpp with 4-float lanes: each lane is one independent
// sequential sum in the reference order, multiply then add (vmulq + vaddq, never FMLA: the
// project builds with -ffp-contract=off, so GCC keeps them two roundings). F16 -> f32 by FCVTL is
// exact. Called only when quant::best_isa() chose a NEON kernel set (arch/arm/ops_arm.cpp).
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace ds4::kernels::detail::neon {

namespace {

inline float h2f(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }
inline float32x4_t load_h4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// 4x4 transpose: in r[k] = row k, columns i..i+3; out c[j] = column i+j, rows 0..3.
inline void transpose4(float32x4_t r[4]) {
  const float32x4x2_t a = vtrnq_f32(r[0], r[1]), b = vtrnq_f32(r[2], r[3]);
  r[0] = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
  r[1] = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
  r[2] = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
  r[3] = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
}

// 4 rows starting at `W`, stride `cols`: acc lanes = rows.
inline float32x4_t rows4(const uint16_t* W, int64_t cols, const float* x) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= cols; i += 4) {
    float32x4_t c[4] = {load_h4(W + i), load_h4(W + cols + i), load_h4(W + 2 * cols + i), load_h4(W + 3 * cols + i)};
    transpose4(c);
    acc = vaddq_f32(acc, vmulq_f32(c[0], vdupq_n_f32(x[i + 0])));
    acc = vaddq_f32(acc, vmulq_f32(c[1], vdupq_n_f32(x[i + 1])));
    acc = vaddq_f32(acc, vmulq_f32(c[2], vdupq_n_f32(x[i + 2])));
    acc = vaddq_f32(acc, vmulq_f32(c[3], vdupq_n_f32(x[i + 3])));
  }
  if (i < cols) {  // finish each lane's sum in scalar, same order
    float lane[4];
    vst1q_f32(lane, acc);
    for (int r = 0; r < 4; r++)
      for (int64_t j = i; j < cols; j++) lane[r] += h2f(W[r * cols + j]) * x[j];
    acc = vld1q_f32(lane);
  }
  return acc;
}

// rows4 for N activation rows (xs[t]; results to outs[t][0..3]): each 4x4 tile of weights is
// converted and transposed once, then every row's accumulator takes its columns in rows4's order,
// acc + c * x. N is a template argument so the accumulators live in registers.
template <int N>
void rows4_multi(const uint16_t* W, int64_t cols, const float* const* xs, float* const* outs) {
  float32x4_t acc[N];
  for (int t = 0; t < N; t++) acc[t] = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 4 <= cols; i += 4) {
    float32x4_t c[4] = {load_h4(W + i), load_h4(W + cols + i), load_h4(W + 2 * cols + i), load_h4(W + 3 * cols + i)};
    transpose4(c);
    for (int k = 0; k < 4; k++)
      for (int t = 0; t < N; t++) acc[t] = vaddq_f32(acc[t], vmulq_f32(c[k], vdupq_n_f32(xs[t][i + k])));
  }
  float lane[N][4];
  for (int t = 0; t < N; t++) vst1q_f32(lane[t], acc[t]);
  for (int r = 0; r < 4; r++)  // rows4's scalar finish of each lane, same order
    for (int64_t j = i; j < cols; j++) {
      const float w = h2f(W[r * cols + j]);
      for (int t = 0; t < N; t++) lane[t][r] += w * xs[t][j];
    }
  for (int t = 0; t < N; t++) vst1q_f32(outs[t], vld1q_f32(lane[t]));
}

using Rows4MultiFn = void (*)(const uint16_t*, int64_t, const float* const*, float* const*);
constexpr Rows4MultiFn kRows4Multi[] = {rows4_multi<1>, rows4_multi<2>, rows4_multi<3>, rows4_multi<4>,
                                        rows4_multi<5>, rows4_multi<6>, rows4_multi<7>, rows4_multi<8>};

}  // namespace

void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride) {
  const float* xs[8];
  float* outs[8];
  for (int t = 0; t < n_x; t++) xs[t] = x + size_t(t) * x_stride;
  const Rows4MultiFn rows4_n = kRows4Multi[n_x - 1];
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    for (int t = 0; t < n_x; t++) outs[t] = out + size_t(t) * out_stride + size_t(r - r0);
    rows4_n(W + r * cols, cols, xs, outs);
  }
  for (; r < r1; r++) {  // f16_matvec_rows' leftover rows, one sequential sum each
    float acc[8] = {};
    const uint16_t* row = W + r * cols;
    for (int64_t i = 0; i < cols; i++) {
      const float w = h2f(row[i]);
      for (int t = 0; t < n_x; t++) acc[t] += w * xs[t][i];
    }
    for (int t = 0; t < n_x; t++) out[size_t(t) * out_stride + size_t(r - r0)] = acc[t];
  }
}

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) vst1q_f32(out + (r - r0), rows4(W + r * cols, cols, x));
  for (; r < r1; r++) {
    float acc = 0.0f;
    const uint16_t* row = W + r * cols;
    for (int64_t i = 0; i < cols; i++) acc += h2f(row[i]) * x[i];
    out[r - r0] = acc;
  }
}

void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out) {
  for (uint32_t l0 = 0; l0 < lanes; l0 += 64) {
    const uint32_t nv = (lanes - l0 >= 64 ? 64 : lanes - l0) / 4;
    float32x4_t acc[16];
    for (uint32_t v = 0; v < nv; v++) acc[v] = vdupq_n_f32(0.0f);
    const float* q = qT + l0;
    for (uint32_t i = 0; i < d; i++) {
      const float32x4_t kb = vdupq_n_f32(k[i]);
      const float* qi = q + size_t(i) * lanes;
      for (uint32_t v = 0; v < nv; v++) acc[v] = vaddq_f32(acc[v], vmulq_f32(vld1q_f32(qi + 4 * v), kb));
    }
    for (uint32_t v = 0; v < nv; v++) vst1q_f32(out + l0 + 4 * v, acc[v]);
  }
}

void axpy(float* y, const float* x, float a, uint32_t n) {
  const float32x4_t av = vdupq_n_f32(a);
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_f32(av, vld1q_f32(x + i))));
  for (; i < n; i++) y[i] += a * x[i];
}

}  // namespace ds4::kernels::detail::neon
