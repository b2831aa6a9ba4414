#pragma once
// Internal: the x86 AVX2 kernels (arch/x86/*_avx2.cpp, compiled with -mavx2 -mfma -mf16c and
// only called when the CPU has all three).
#include <cstddef>
#include <cstdint>

namespace ds4::quant::detail {

// Float dots in the Fast order (docs/arithmetic.md §float-dot) and the Exact one (SIMD products,
// serial sum).
float dot_f32_avx2(const void* w, const void* act, int64_t n);
float dot_f16_avx2(const void* w, const void* act, int64_t n);
float dot_bf16_avx2(const void* w, const void* act, int64_t n);
void dot_f32_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_f16_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_bf16_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
float dot_f32_avx2_exact(const void* w, const void* act, int64_t n);
float dot_f16_avx2_exact(const void* w, const void* act, int64_t n);
float dot_bf16_avx2_exact(const void* w, const void* act, int64_t n);
// Integer formats in Order::Exact: bit-identical to the generic kernels.
float dot_q8_0_avx2(const void* w, const void* act, int64_t n);
float dot_q2_k_avx2(const void* w, const void* act, int64_t n);
float dot_q4_k_avx2(const void* w, const void* act, int64_t n);
float dot_iq2_xxs_avx2(const void* w, const void* act, int64_t n);
float dot_mxfp4_avx2(const void* w, const void* act, int64_t n);
// Multi-activation kernels (see quant.hpp DotMultiFn).
void dot_q8_0_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_mxfp4_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q4_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q2_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
// Exact-order F16/BF16 (each output == dot_*_avx2_exact).
void dot_f16_multi_avx2_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_bf16_multi_avx2_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_iq2_xxs_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
// The Fast order (docs/arithmetic.md §quantized-dot): bit-identical to the generic Fast kernels.
float dot_q8_0_fast_avx2(const void* w, const void* act, int64_t n);
float dot_q2_k_fast_avx2(const void* w, const void* act, int64_t n);
float dot_q4_k_fast_avx2(const void* w, const void* act, int64_t n);
float dot_iq2_xxs_fast_avx2(const void* w, const void* act, int64_t n);
float dot_mxfp4_fast_avx2(const void* w, const void* act, int64_t n);
void dot_q8_0_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_mxfp4_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q4_k_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q2_k_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_iq2_xxs_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);

}  // namespace ds4::quant::detail
