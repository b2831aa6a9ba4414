#pragma once
// RMSNorm in the Fast order (docs/arithmetic.md §rmsnorm), bit-identical to the CPU's
// engine/model/rms_norm.cpp with ex.exact = false: ss is the Fast float dot of the row with
// itself (float_dot_block.cuh), mean = ss / n, r = 1 / sqrt(mean + eps) with the correctly
// rounded __fdiv_rn and __fsqrt_rn, out = (x * r) * w, each one rounding. One block of 256
// threads per row; out may be x (every read of the row precedes the barrier before the writes).
#include <cstdint>

#include "engine/cuda/kernels/float_dot_block.cuh"
#include "engine/quant/fast_math.hpp"

// x, out: rows x n floats, row t at t * n; w: n floats or null (no weight). Grid: one block per
// row; block: stages::kDotThreads threads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  namespace st = ds4::cuda::stages;
  __shared__ float slices[ds4::quant::fast::kSlices];
  __shared__ float scale;
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float* yr = out + static_cast<int64_t>(blockIdx.x) * n;
  const float ss = st::block_fast_dot(xr, xr, n, slices);
  if (threadIdx.x == 0) {
    const float mean = ds4::quant::fast::div(ss, __ll2float_rn(n));
    scale = ds4::quant::fast::div(1.0f, __fsqrt_rn(st::arith::add(mean, eps)));
  }
  __syncthreads();
  const float r = scale;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float xr_i = st::arith::mul(xr[i], r);
    yr[i] = w ? st::arith::mul(xr_i, w[i]) : xr_i;
  }
}
