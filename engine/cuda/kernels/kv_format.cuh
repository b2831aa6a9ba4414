#pragma once
// The KV-format simulations of stored rows (engine/model/kv_format.hpp) on the device,
// bit-identical to the CPU: FP8 E4M3 on the non-RoPE dims in blocks of 64 (attention KV rows:
// the raw window's and the compressed ones), or the 128-point Hadamard rotation then FP4 E2M1 in
// blocks of 32 (indexer rows and query heads), optionally followed by the f16 rounding of a stored
// row. The per-element steps are engine/quant/kv_sim.hpp's, as in quant/fp_sim.cpp; a block's
// |max| is exact in any order, and the butterflies of one Hadamard stage are disjoint pairs.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"
#include "engine/quant/kv_sim.hpp"

namespace ds4::cuda::stages {
constexpr int32_t kKvFormatFp8 = 0, kKvFormatFp4Hadamard = 1;
constexpr int kKvFormatMaxDim = 1024;
}  // namespace ds4::cuda::stages

// x: rows x dim floats; row t goes to dst[t] (dim floats) or, with dst null, back to x's row t.
// fmt: kKvFormatFp8 (FP8 on the first dim - n_rot values, a multiple of 64) or
// kKvFormatFp4Hadamard (dim 128). round_f16: round every value to f16 last. Grid: one block per
// row; block: dim rounded up to a multiple of 32 threads (at most kKvFormatMaxDim).
extern "C" __global__ void __launch_bounds__(1024)
    ds4_kv_format(float* x, float* const* dst, int32_t dim, int32_t n_rot, int32_t fmt, int32_t round_f16) {
  namespace kvsim = ds4::quant::kvsim;
  namespace arith = ds4::quant::arith;
  namespace fast = ds4::quant::fast;
  namespace st = ds4::cuda::stages;
  __shared__ float buf[st::kKvFormatMaxDim];
  __shared__ float scales[st::kKvFormatMaxDim / 32];
  const int tid = static_cast<int>(threadIdx.x);
  float* row = x + static_cast<int64_t>(blockIdx.x) * dim;
  float v = tid < dim ? row[tid] : 0.0f;
  const bool fp8 = fmt == st::kKvFormatFp8;
  if (!fp8) {  // Hadamard: stage by stride, thread p < 64 owns butterfly p of the stage
    buf[tid] = v;
    for (int stride = 1; stride < 128; stride *= 2) {
      __syncthreads();
      if (tid < 64) {
        const int lo = (tid / stride) * 2 * stride + tid % stride, hi = lo + stride;
        const float a = buf[lo], b = buf[hi];
        buf[lo] = arith::add(a, b);
        buf[hi] = fast::sub(a, b);
      }
    }
    __syncthreads();
    v = tid < dim ? arith::mul(buf[tid], kvsim::kHadamardScale) : 0.0f;
  }
  const int block = fp8 ? 64 : 32, n_sim = fp8 ? dim - n_rot : dim;
  __syncthreads();  // buf's Hadamard values have been read
  buf[tid] = v;
  __syncthreads();
  if (tid < n_sim && tid % block == 0) {
    float amax = 0.0f;
    for (int i = 0; i < block; i++) amax = kvsim::amax_step(amax, buf[tid + i]);
    scales[tid / block] = fp8 ? kvsim::block_scale(amax, kvsim::kFp8Max, kvsim::kFp8Floor)
                              : kvsim::block_scale(amax, kvsim::kFp4Max, kvsim::kFp4Floor);
  }
  __syncthreads();
  if (tid < n_sim) v = fp8 ? kvsim::fp8_value(v, scales[tid / block]) : kvsim::fp4_value(v, scales[tid / block]);
  if (round_f16) v = kvsim::round_f16(v);
  if (tid < dim) (dst ? dst[blockIdx.x] : row)[tid] = v;
}
