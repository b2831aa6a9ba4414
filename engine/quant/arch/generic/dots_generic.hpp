#pragma once
// Internal: the generic (scalar reference) dot kernels, arch/generic/dots_generic.cpp.
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

}  // namespace ds4::quant::detail
