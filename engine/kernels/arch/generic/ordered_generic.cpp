// The sequential references of the order-preserving kernels (ordered_simd.hpp), and what runs
// on a machine without a SIMD implementation of them.
#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::detail {
namespace {

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  // The reference is ds4's dot_f16_row: the F16 format's generic dot, one row at a time.
  const quant::DotFn dot = quant::cpu_kernels(quant::Type::F16, quant::Arch::Generic).dot_exact;
  for (int64_t r = r0; r < r1; r++) out[r - r0] = dot(W + r * cols, x, cols);
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

const OrderedOps kOrderedGeneric{f16_matvec_rows, dot_lanes, axpy};

}  // namespace ds4::kernels::detail
