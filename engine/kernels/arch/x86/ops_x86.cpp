// x86-64: the AVX2 (+F16C) order-preserving kernels and read probe, for the Avx2 kernel
// architecture (whose CPU check, AVX2+FMA+F16C, covers what these need). No ISA flags here.
#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::detail {

namespace avx2 {
void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);
void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride);
void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);
void axpy(float* y, const float* x, float a, uint32_t n);
uint64_t read_stream(const uint8_t* p, size_t bytes);
}  // namespace avx2

namespace {
const OrderedOps kAvx2{avx2::f16_matvec_rows, avx2::f16_matvec_rows_multi, avx2::dot_lanes, avx2::axpy};
}

const OrderedOps* arch_ordered_ops(quant::Arch a) { return a == quant::Arch::Avx2 ? &kAvx2 : nullptr; }
ReadStreamFn arch_read_stream(quant::Arch a) { return a == quant::Arch::Avx2 ? avx2::read_stream : nullptr; }

}  // namespace ds4::kernels::detail
