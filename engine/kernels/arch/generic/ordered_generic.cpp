// The sequential references of the order-preserving kernels (ordered_simd.hpp), and what runs
// on a machine without a SIMD implementation of them.
#include <algorithm>

#include "engine/kernels/arch/kernel_ops.hpp"
#include "engine/kernels/ordered_simd.hpp"

namespace ds4::kernels::detail {
namespace {

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  // The reference is ds4's dot_f16_row: the F16 format's generic dot, one row at a time.
  const quant::DotFn dot = quant::cpu_kernels(quant::Type::F16, quant::Arch::Generic).dot_exact;
  for (int64_t r = r0; r < r1; r++) out[r - r0] = dot(W + r * cols, x, cols);
}

// The F16 generic dot's steps (acc = acc + f32(w) * x, index order) for each activation row, with
// each weight converted once for all of them (the F16 dequantizer: the conversion is exact).
void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride) {
  constexpr int64_t kStrip = 256;
  const quant::DequantizeFn to_f32 = quant::traits(quant::Type::F16).dequantize;
  float w[kStrip];
  for (int64_t r = r0; r < r1; r++) {
    const uint16_t* row = W + r * cols;
    float acc[ordered::kMultiRows] = {};
    for (int64_t i0 = 0; i0 < cols; i0 += kStrip) {
      const int64_t len = std::min(kStrip, cols - i0);
      to_f32(row + i0, w, len);
      for (int t = 0; t < n_x; t++) {
        const float* xt = x + size_t(t) * x_stride + i0;
        float a = acc[t];
        for (int64_t k = 0; k < len; k++) a += w[k] * xt[k];
        acc[t] = a;
      }
    }
    for (int t = 0; t < n_x; t++) out[size_t(t) * out_stride + size_t(r - r0)] = acc[t];
  }
}

void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out) {
  for (uint32_t l = 0; l < lanes; l++) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < d; i++) acc += qT[size_t(i) * lanes + l] * k[i];
    out[l] = acc;
  }
}

void axpy(float* y, const float* x, float a, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) y[i] += a * x[i];
}

}  // namespace

const OrderedOps kOrderedGeneric{f16_matvec_rows, f16_matvec_rows_multi, dot_lanes, axpy};

}  // namespace ds4::kernels::detail
