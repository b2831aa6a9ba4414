// Dispatch for the order-preserving kernels (ordered_simd.hpp): the implementation of
// quant::best_isa()'s architecture where it has one (arch/x86: AVX2+F16C, arch/arm: NEON), the
// sequential references otherwise (arch/generic) -- the same bits either way.
#include "engine/kernels/ordered_simd.hpp"

#include <algorithm>

#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::ordered {
namespace {

const detail::OrderedOps& ops() {
  static const detail::OrderedOps* const o = [] {
    const detail::OrderedOps* a = detail::arch_ordered_ops(quant::best_isa().arch);
    return a != nullptr ? a : &detail::kOrderedGeneric;
  }();
  return *o;
}

}  // namespace

bool available() { return &ops() != &detail::kOrderedGeneric; }

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  ops().f16_matvec_rows(W, cols, r0, r1, x, out);
}

void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride) {
  for (int t0 = 0; t0 < n_x; t0 += kMultiRows)
    ops().f16_matvec_rows_multi(W, cols, r0, r1, x + size_t(t0) * x_stride, x_stride, std::min(kMultiRows, n_x - t0),
                                out + size_t(t0) * out_stride, out_stride);
}

void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out) {
  ops().dot_lanes(qT, lanes, k, d, out);
}

void axpy(float* y, const float* x, float a, uint32_t n) { ops().axpy(y, x, a, n); }

}  // namespace ds4::kernels::ordered
