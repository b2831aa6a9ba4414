#pragma once
// Simulations of the low-precision formats DeepSeek V4 applies inside its graph
// (docs/quant.md §format-simulations; ds4.c dsv4_fp8_kv_quantize_row_inplace_cpu, dsv4_hadamard128_inplace_cpu,
// dsv4_fp4_act_quantize_row_inplace_cpu). Values are rounded to the format and immediately
// decoded back to f32 ("quantize-dequantize"), exactly as ds4's CPU reference does, ties and all.
#include <cstdint>

namespace ds4::quant {

// Nearest E4M3FN value to x, |x| clamped to 448. Codes 0..126: exponent field 0 is m*2^-9,
// otherwise (1+m/8)*2^(e-7). On a tie the upper code is taken only if it is even.
float e4m3fn_round(float x);

// FP8 KV simulation of one 64-value block in place: amax = max(max|x|, 1e-4);
// scale = 2^ceil(log2(amax/448)); x = e4m3fn_round(clamp(x/scale, ±448)) * scale.
void fp8_e4m3_simulate_block64(float* x);

// The KV-row form: blocks of 64 over the first n_nope values (n_nope a multiple of 64; the
// RoPE'd tail is left alone). Throws std::invalid_argument otherwise.
void fp8_kv_simulate_row(float* x, int n_nope);

// Unnormalised Walsh-Hadamard transform of 128 values in place (butterflies (a,b) -> (a+b, a-b)
// at strides 1, 2, ..., 64), then multiplied by 0.08838834764831845f (1/sqrt(128)).
void hadamard128(float* x);

// Nearest E2M1 magnitude in {0, .5, 1, 1.5, 2, 3, 4, 6} with x's sign, |x| clamped to 6; ties
// go to the even index (0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4).
float e2m1_round(float x);

// FP4 simulation of one 32-value block in place: amax = max(max|x|, 7.052966104933725e-38);
// scale = 2^ceil(log2(amax/6)); x = e2m1_round(clamp(x/scale, ±6)) * scale.
void fp4_e2m1_simulate_block32(float* x);

// FP4 over a row (n a multiple of 32; throws std::invalid_argument otherwise).
void fp4_simulate_row(float* x, int n);

// Indexer QAT of one 128-wide head row: hadamard128 then fp4_simulate_row(x, 128).
void indexer_qat_row(float* x);

}  // namespace ds4::quant
