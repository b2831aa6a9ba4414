#pragma once
// Internal: the generic (scalar reference) dot kernels of both orders: Exact in
// arch/generic/dots_generic.cpp, Fast in arch/generic/dots_fast_generic.cpp.
#include <cstdint>

namespace ds4::quant::detail {

float dot_f32_generic(const void* w, const void* act, int64_t n);
float dot_f16_generic(const void* w, const void* act, int64_t n);
float dot_bf16_generic(const void* w, const void* act, int64_t n);
float dot_q8_0_generic(const void* w, const void* act, int64_t n);
float dot_q2_k_generic(const void* w, const void* act, int64_t n);
float dot_q4_k_generic(const void* w, const void* act, int64_t n);
float dot_iq2_xxs_generic(const void* w, const void* act, int64_t n);
float dot_mxfp4_generic(const void* w, const void* act, int64_t n);

// The Fast order (dots_fast_generic.cpp; docs/arithmetic.md §quantized-dot, §float-dot).
float dot_f32_fast_generic(const void* w, const void* act, int64_t n);
float dot_f16_fast_generic(const void* w, const void* act, int64_t n);
float dot_bf16_fast_generic(const void* w, const void* act, int64_t n);
float dot_q8_0_fast_generic(const void* w, const void* act, int64_t n);
float dot_q2_k_fast_generic(const void* w, const void* act, int64_t n);
float dot_q4_k_fast_generic(const void* w, const void* act, int64_t n);
float dot_iq2_xxs_fast_generic(const void* w, const void* act, int64_t n);
float dot_mxfp4_fast_generic(const void* w, const void* act, int64_t n);

}  // namespace ds4::quant::detail
