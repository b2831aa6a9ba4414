#pragma once
// Activation quantizers on the device (docs/quant.md §activation-quantization), byte-identical to
// the CPU's quantize_act_q8_0 / quantize_act_q8_k (engine/quant/q8_0.cpp, q8_k.cpp): the same
// shared steps (engine/quant/act_quant.hpp). One warp per quantization block, 8 warps a CUDA
// block. The block maximum is a warp reduction: max is exact in any order, and Q8_K's "first
// element of largest |x|" is the (|x|, lowest index) pair, so the bytes do not depend on it.
#include <cstdint>

#include "engine/quant/act_quant.hpp"
#include "engine/quant/blocks.hpp"

// x: n_blocks * 32 floats; out: n_blocks Q8_0 activation blocks {f32 d; i8 q[32]}.
extern "C" __global__ void ds4_quantize_q8_0(const float* x, ds4::quant::detail::BlockQ8_0Act* out, int64_t n_blocks) {
  namespace act = ds4::quant::act;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (b >= n_blocks) return;  // whole warps leave together
  const unsigned lane = threadIdx.x % 32;
  const float v = x[b * 32 + lane];
  const float ax = act::abs(v);
  float amax = ax > 0.0f ? ax : 0.0f;  // the CPU's strict > scan from 0 skips NaN
  for (int m = 16; m >= 1; m /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, amax, m);
    amax = o > amax ? o : amax;
  }
  const float d = act::q8_0_d(amax);
  out[b].qs[lane] = act::to_int8(v, act::q8_0_inverse(d));
  if (lane == 0) out[b].d = d;
}

// x: n_blocks * 256 floats; out: n_blocks Q8_K blocks {f32 d; i8 q[256]; i16 bsums[16]}.
// Lane l holds elements l + 32k (k < 8): bsums[2k] is lanes 0..15's q at k, bsums[2k+1] 16..31's.
extern "C" __global__ void ds4_quantize_q8_k(const float* x, ds4::quant::detail::BlockQ8_K* out, int64_t n_blocks) {
  namespace act = ds4::quant::act;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (b >= n_blocks) return;
  const unsigned lane = threadIdx.x % 32;
  const float* xb = x + b * 256;
  float v[8];
  float best = 0.0f;  // |x| of the first element that beats 0 strictly (NaN never does)
  int idx = 256;
  for (int k = 0; k < 8; k++) {
    v[k] = xb[lane + 32 * k];
    const float ax = act::abs(v[k]);
    if (ax > best) {
      best = ax;
      idx = static_cast<int>(lane) + 32 * k;
    }
  }
  for (int m = 16; m >= 1; m /= 2) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, m);
    const int oi = __shfl_xor_sync(0xffffffffu, idx, m);
    if (ob > best || (ob == best && oi < idx)) {
      best = ob;
      idx = oi;
    }
  }
  ds4::quant::detail::BlockQ8_K& y = out[b];
  if (best == 0.0f) {  // the CPU's all-zero block
    for (int k = 0; k < 8; k++) y.qs[lane + 32 * k] = 0;
    if (lane < 16) y.bsums[lane] = 0;
    if (lane == 0) y.d = 0.0f;
    return;
  }
  const float iscale = act::q8_k_iscale(xb[idx]);
  for (int k = 0; k < 8; k++) {
    const int8_t q = act::to_int8(v[k], iscale);
    y.qs[lane + 32 * k] = q;
    int s = q;  // exact: the sum of 16 lanes' q, any order
    for (int m = 8; m >= 1; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
    if (lane % 16 == 0) y.bsums[2 * k + lane / 16] = static_cast<int16_t>(s);
  }
  if (lane == 0) y.d = act::q8_k_d(iscale);
}
