#pragma once
// RMSNorm in the Fast order (docs/arithmetic.md §rmsnorm), bit-identical to the CPU's
// engine/model/rms_norm.cpp with ex.exact = false: the exact squares summed in binary64, element i
// in slice i mod 8 (threads 0..7, each its slice in ascending order), the slices' pairwise tree,
// mean = fl32(ss / n), r = 1 / sqrt(mean + eps) with the correctly rounded __fdiv_rn and
// __fsqrt_rn, out = (x * r) * w. One block per row; the sum is 8 chains of n/8 dependent binary64
// adds (latency, not throughput: a few microseconds per row even at GB10's 1/64 binary64 rate).
// out may be x (every read of the row precedes the barrier before the writes).
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"
#include "engine/quant/fast_order.hpp"

// x, out: rows x n floats, row t at t * n; w: n floats or null (no weight). Grid: one block per
// row; block: at least fast::kSlices threads (256 is a good choice for the scaling loop).
extern "C" __global__ void ds4_rms_norm(const float* x, const float* w, float* out, int64_t n, float eps) {
  namespace fast = ds4::quant::fast;
  namespace arith = ds4::quant::arith;
  __shared__ double slices[fast::kSlices];
  __shared__ float scale;
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float* yr = out + static_cast<int64_t>(blockIdx.x) * n;
  if (threadIdx.x < fast::kSlices) {
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += fast::kSlices) {
      const double v = static_cast<double>(xr[i]);
      s = fast::dadd(s, fast::dmul(v, v));  // the square is exact in binary64
    }
    slices[threadIdx.x] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const double ss = fast::dadd(fast::dadd(fast::dadd(slices[0], slices[1]), fast::dadd(slices[2], slices[3])),
                                 fast::dadd(fast::dadd(slices[4], slices[5]), fast::dadd(slices[6], slices[7])));
    const float mean = __double2float_rn(__ddiv_rn(ss, static_cast<double>(n)));
    scale = fast::div(1.0f, __fsqrt_rn(arith::add(mean, eps)));
  }
  __syncthreads();
  const float r = scale;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float xr_i = arith::mul(xr[i], r);
    yr[i] = w ? arith::mul(xr_i, w[i]) : xr_i;
  }
}
