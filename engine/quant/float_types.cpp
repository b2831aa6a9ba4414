// F32, F16 and BF16: the plain float formats. The activation for all three is plain f32
// (vec_dot_type F32), and the scalar dots are ds4's exact CPU order:
//   F32 (ds4.c matvec_f32_worker): double acc = 0; acc += (double)w[i] * (double)x[i] in index
//       order; result (float)acc.
//   F16 (ds4.c dot_f16_row, x86 path): float acc = 0; acc += f16_to_f32(w[i]) * x[i] in index
//       order (one f32 product, one f32 add, no FMA).
//   BF16: not used by ds4; same order as F16.
// The generic dots are in arch/generic/dots_generic.cpp; the SIMD versions (arch/x86, arch/arm)
// reorder the sum in Order::Fast and keep this order in Order::Exact.
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {

void dequantize_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void quantize_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void quantize_act_f32(const float* src, void* dst, int64_t n) { quantize_f32(src, dst, n); }

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(h[i]);
}
void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; i++) h[i] = f32_to_f16(src[i]);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(h[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; i++) h[i] = f32_to_bf16(src[i]);
}

}  // namespace ds4::quant::detail
