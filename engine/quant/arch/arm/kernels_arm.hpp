#pragma once
// Internal: the AArch64 kernels. *_neon: plain Advanced SIMD (every AArch64 CPU); *_dotprod:
// the same integer dots, single-row and multi-activation (quant.hpp DotMultiFn), through SDOT
// (ARMv8.2 dotprod, dots_dotprod.cpp is compiled with +dotprod and only called where
// HWCAP_ASIMDDP is set). Every dot comes in both orders: Order::Exact (dot_<format>_<suffix>,
// *_exact for the float formats) and Order::Fast (dot_<format>_fast_<suffix>, dot_f*_neon),
// each bit-identical to the generic kernel of its order.
#include <cstddef>
#include <cstdint>

namespace ds4::quant::detail {

#define DS4_ARM_INT_DOTS(suffix) \
  float dot_q8_0_##suffix(const void* w, const void* act, int64_t n); \
  float dot_q2_k_##suffix(const void* w, const void* act, int64_t n); \
  float dot_q4_k_##suffix(const void* w, const void* act, int64_t n); \
  float dot_iq2_xxs_##suffix(const void* w, const void* act, int64_t n); \
  float dot_mxfp4_##suffix(const void* w, const void* act, int64_t n); \
  void dot_q8_0_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_q2_k_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_q4_k_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_iq2_xxs_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_mxfp4_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  float dot_q8_0_fast_##suffix(const void* w, const void* act, int64_t n); \
  float dot_q2_k_fast_##suffix(const void* w, const void* act, int64_t n); \
  float dot_q4_k_fast_##suffix(const void* w, const void* act, int64_t n); \
  float dot_iq2_xxs_fast_##suffix(const void* w, const void* act, int64_t n); \
  float dot_mxfp4_fast_##suffix(const void* w, const void* act, int64_t n); \
  void dot_q8_0_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_q2_k_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_q4_k_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out); \
  void dot_iq2_xxs_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, \
                                       float* out); \
  void dot_mxfp4_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, float* out);
DS4_ARM_INT_DOTS(neon)
DS4_ARM_INT_DOTS(dotprod)
#undef DS4_ARM_INT_DOTS

// Float dots: the Fast order (docs/arithmetic.md §float-dot), single- and multi-row, and the
// Exact order (SIMD products, serial sum).
float dot_f32_neon(const void* w, const void* act, int64_t n);
float dot_f16_neon(const void* w, const void* act, int64_t n);
float dot_bf16_neon(const void* w, const void* act, int64_t n);
void dot_f32_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_f16_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_bf16_multi_neon(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
float dot_f32_neon_exact(const void* w, const void* act, int64_t n);
float dot_f16_neon_exact(const void* w, const void* act, int64_t n);
float dot_bf16_neon_exact(const void* w, const void* act, int64_t n);
// Exact-order F16/BF16 for several activation rows (each output == dot_*_neon_exact).
void dot_f16_multi_neon_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_bf16_multi_neon_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);

// Activation quantizers, byte-identical to quantize_act_q8_0 / quantize_act_q8_k.
void quantize_act_q8_0_neon(const float* src, void* dst, int64_t n);
void quantize_act_q8_k_neon(const float* src, void* dst, int64_t n);

}  // namespace ds4::quant::detail
