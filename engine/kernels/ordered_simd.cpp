// Dispatch for the order-preserving kernels (ordered_simd.hpp): AVX2+F16C when the CPU has
// them, scalar reference loops otherwise (same results either way).
#include "engine/kernels/ordered_simd.hpp"

#include "engine/quant/quant.hpp"

namespace ds4::kernels::ordered {

namespace avx2 {
void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);
void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);
void axpy(float* y, const float* x, float a, uint32_t n);
}  // namespace avx2

bool available() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return ok;
}

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  if (available()) return avx2::f16_matvec_rows(W, cols, r0, r1, x, out);
  // The reference is ds4's dot_f16_row: the F16 format's scalar dot, one row at a time.
  const quant::DotFn dot = quant::traits(quant::Type::F16).dot_scalar;
  for (int64_t r = r0; r < r1; r++) out[r - r0] = dot(W + r * cols, x, cols);
}

void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out) {
  if (available()) return avx2::dot_lanes(qT, lanes, k, d, out);
  for (uint32_t l = 0; l < lanes; l++) {
    float acc = 0.0f;
    for (uint32_t i = 0; i < d; i++) acc += qT[size_t(i) * lanes + l] * k[i];
    out[l] = acc;
  }
}

void axpy(float* y, const float* x, float a, uint32_t n) {
  if (available()) return avx2::axpy(y, x, a, n);
  for (uint32_t i = 0; i < n; i++) y[i] += a * x[i];
}

}  // namespace ds4::kernels::ordered
