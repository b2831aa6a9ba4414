#pragma once
// Token embedding on the device, bit-identical to the CPU's embed_rows (engine/model/forward.cpp):
// the token's f16 row decoded exactly (arith::f16_to_f32) into all n_hc streams of the residual.
// An id outside [0, n_vocab) reads nothing: its rows are zeroed and *error set to 1 (a plain
// store of the same value from every thread that sees one), which the launcher's caller checks.
#include <cstdint>

#include "engine/quant/block_arith.hpp"

// tokens: T int32 ids; table: n_vocab x n_embd halves; H: T x n_hc x n_embd floats. Grid: T
// blocks, block t fills token t.
extern "C" __global__ void ds4_embed(const int32_t* tokens, const uint16_t* table, int64_t n_vocab, int64_t n_embd,
                                     int32_t n_hc, float* H, int32_t* error) {
  const int64_t t = blockIdx.x;
  const int32_t id = tokens[t];
  const bool ok = id >= 0 && id < n_vocab;
  if (!ok && threadIdx.x == 0) *error = 1;
  const uint16_t* row = table + (ok ? id : 0) * n_embd;
  float* h = H + t * n_hc * n_embd;
  for (int64_t i = threadIdx.x; i < n_embd; i += blockDim.x) {
    const float v = ok ? ds4::quant::arith::f16_to_f32(row[i]) : 0.0f;
    for (int32_t s = 0; s < n_hc; s++) h[s * n_embd + i] = v;
  }
}
