// FP8 (E4M3FN) and FP4 (E2M1) quantize-dequantize simulations and the 128-point Hadamard
// rotation used by DeepSeek V4's KV cache and indexer (docs/quant.md §format-simulations). They are part of the model
// graph: leaving them out changes attention and indexer top-k. The arithmetic mirrors ds4's CPU code (division by the
// power-of-two scale, ceil(log2f) for the scale, f32 |difference| comparisons for nearest-value search) so the
// results match it bit for bit; the steps are kv_sim.hpp's __host__ __device__ functions (no libm).
#include "engine/quant/fp_sim.hpp"

#include <stdexcept>
#include <string>

#include "engine/quant/kv_sim.hpp"

namespace ds4::quant {

float e4m3fn_round(float x) { return kvsim::e4m3fn_round(x); }

void fp8_e4m3_simulate_block64(float* x) {
  float amax = 0.0f;
  for (int i = 0; i < 64; i++) amax = kvsim::amax_step(amax, x[i]);
  const float scale = kvsim::block_scale(amax, kvsim::kFp8Max, kvsim::kFp8Floor);
  for (int i = 0; i < 64; i++) x[i] = kvsim::fp8_value(x[i], scale);
}

void fp8_kv_simulate_row(float* x, int n_nope) {
  if (n_nope < 0 || n_nope % 64 != 0)
    throw std::invalid_argument("FP8 KV simulation needs a multiple of 64 non-RoPE dims, got " +
                                std::to_string(n_nope));
  for (int off = 0; off < n_nope; off += 64) fp8_e4m3_simulate_block64(x + off);
}

void hadamard128(float* x) {
  for (int stride = 1; stride < 128; stride *= 2)
    for (int base = 0; base < 128; base += 2 * stride)
      for (int i = 0; i < stride; i++) {
        const float a = x[base + i], b = x[base + stride + i];
        x[base + i] = arith::add(a, b);
        x[base + stride + i] = fast::sub(a, b);
      }
  for (int i = 0; i < 128; i++) x[i] = arith::mul(x[i], kvsim::kHadamardScale);
}

float e2m1_round(float x) { return kvsim::e2m1_round(x); }

void fp4_e2m1_simulate_block32(float* x) {
  float amax = 0.0f;
  for (int i = 0; i < 32; i++) amax = kvsim::amax_step(amax, x[i]);
  const float scale = kvsim::block_scale(amax, kvsim::kFp4Max, kvsim::kFp4Floor);
  for (int i = 0; i < 32; i++) x[i] = kvsim::fp4_value(x[i], scale);
}

void fp4_simulate_row(float* x, int n) {
  if (n < 0 || n % 32 != 0)
    throw std::invalid_argument("FP4 simulation needs a multiple of 32 values, got " + std::to_string(n));
  for (int off = 0; off < n; off += 32) fp4_e2m1_simulate_block32(x + off);
}

void indexer_qat_row(float* x) {
  hadamard128(x);
  fp4_simulate_row(x, 128);
}

}  // namespace ds4::quant
