#pragma once
// Internal: the per-format functions the traits table (traits.cpp) points at. One family per
// source file: float_types.cpp, q8_0.cpp, q8_k.cpp, q2_k.cpp, q4_k.cpp, iq2_xxs.cpp, mxfp4.cpp.
// The CPU dot kernels live per architecture under arch/ (generic, x86, arm).
#include <cstdint>

namespace ds4::quant::detail {

#define DS4_QUANT_FAMILY(name) \
  void dequantize_##name(const void* src, float* dst, int64_t n); \
  void quantize_##name(const float* src, void* dst, int64_t n);

DS4_QUANT_FAMILY(f32)
DS4_QUANT_FAMILY(f16)
DS4_QUANT_FAMILY(bf16)
DS4_QUANT_FAMILY(q8_0)
DS4_QUANT_FAMILY(q2_k)
DS4_QUANT_FAMILY(q4_k)
DS4_QUANT_FAMILY(iq2_xxs)
DS4_QUANT_FAMILY(mxfp4)
#undef DS4_QUANT_FAMILY

// Importance-weighted weight quantizers (docs/quant.md §importance-weighted-quantization):
// importance[n] >= 0 per element of the row; the formats whose search has choices to steer.
void quantize_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance);

void dequantize_q8_k(const void* src, float* dst, int64_t n);
// Activation quantizers (docs/quant.md §activation-quantization), into the layouts documented in quant.hpp: the
// references every architecture's activation quantizer must match byte for byte.
void quantize_act_q8_0(const float* src, void* dst, int64_t n);
void quantize_act_q8_k(const float* src, void* dst, int64_t n);
void quantize_act_f32(const float* src, void* dst, int64_t n);

// Shared between the formats and the kernels: Q4_K's packed 6-bit scales and mins.
void unpack_q4_k_scales(const uint8_t* packed12, uint8_t* sc8, uint8_t* m8);

extern const int8_t kMxfp4Values[16];  // doubled E2M1 values, GGML's kvalues_mxfp4

}  // namespace ds4::quant::detail
