// AArch64: the NEON order-preserving kernels and read probe, for both NEON kernel sets (the
// dotprod set adds nothing float-side). No ISA flags here.
#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::detail {

namespace neon {
void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);
void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride);
void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);
void axpy(float* y, const float* x, float a, uint32_t n);
uint64_t read_stream(const uint8_t* p, size_t bytes);
}  // namespace neon

namespace {
const OrderedOps kNeon{neon::f16_matvec_rows, neon::f16_matvec_rows_multi, neon::dot_lanes, neon::axpy};
bool is_neon(quant::Arch a) { return a == quant::Arch::Neon || a == quant::Arch::NeonDotprod; }
}  // namespace

const OrderedOps* arch_ordered_ops(quant::Arch a) { return is_neon(a) ? &kNeon : nullptr; }
ReadStreamFn arch_read_stream(quant::Arch a) { return is_neon(a) ? neon::read_stream : nullptr; }

}  // namespace ds4::kernels::detail
