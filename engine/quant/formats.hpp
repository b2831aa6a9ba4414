#pragma once
// Internal: the per-format functions the traits table (traits.cpp) points at. One family per
// source file: float_types.cpp, q8_0.cpp, q8_k.cpp, q2_k.cpp, q4_k.cpp, iq2_xxs.cpp, mxfp4.cpp;
// AVX2 versions in avx2/*.cpp (compiled with -mavx2 -mfma -mf16c, only called after a CPU check).
#include <cstdint>

namespace ds4::quant::detail {

#define DS4_QUANT_FAMILY(name)                                           \
  void dequantize_##name(const void* src, float* dst, int64_t n);        \
  void quantize_##name(const float* src, void* dst, int64_t n);          \
  float dot_##name##_scalar(const void* w, const void* act, int64_t n); \
  float dot_##name##_avx2(const void* w, const void* act, int64_t n);

DS4_QUANT_FAMILY(f32)
DS4_QUANT_FAMILY(f16)
DS4_QUANT_FAMILY(bf16)
DS4_QUANT_FAMILY(q8_0)
DS4_QUANT_FAMILY(q2_k)
DS4_QUANT_FAMILY(q4_k)
DS4_QUANT_FAMILY(iq2_xxs)
DS4_QUANT_FAMILY(mxfp4)
#undef DS4_QUANT_FAMILY

void dequantize_q8_k(const void* src, float* dst, int64_t n);
// Activation quantizers (§5.2), into the layouts documented in quant.hpp.
void quantize_act_q8_0(const float* src, void* dst, int64_t n);
void quantize_act_q8_k(const float* src, void* dst, int64_t n);
void quantize_act_f32(const float* src, void* dst, int64_t n);

}  // namespace ds4::quant::detail

namespace ds4::quant::detail {
// Exact-order AVX2 float dots (SIMD products, serial sum in index order).
float dot_f32_avx2_exact(const void* w, const void* act, int64_t n);
float dot_f16_avx2_exact(const void* w, const void* act, int64_t n);
float dot_bf16_avx2_exact(const void* w, const void* act, int64_t n);
// Multi-activation kernels (see quant.hpp DotMultiFn).
void dot_q8_0_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_mxfp4_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q4_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_q2_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
void dot_iq2_xxs_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);
// Shared helpers between scalar and AVX2 files.
void unpack_q4_k_scales(const uint8_t* packed12, uint8_t* sc8, uint8_t* m8);
}  // namespace ds4::quant::detail

namespace ds4::quant::detail {
extern const int8_t kMxfp4Values[16];  // doubled E2M1 values, GGML's kvalues_mxfp4
}  // namespace ds4::quant::detail
