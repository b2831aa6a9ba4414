#pragma once
// The int8 tensor-core peak probe of ds4-cuda-check: each warp runs `iters` rounds of kChains
// independent mma.sync m16n8k32 s8 chains on registers (no memory traffic), so the time gives the
// device's mma.sync int8 rate: 2·16·8·32 operations per mma. The GEMM's rate is reported as a
// share of it (docs/cuda.md §gemm). Each thread writes its sum, so nothing is optimised away.
#include <cstdint>

#include "engine/cuda/kernels/mma.cuh"

namespace ds4::cuda::kernels {
constexpr int kMmaPeakChains = 8;  // enough independent mma in flight to cover its latency
}

extern "C" __global__ void __launch_bounds__(256) ds4_mma_peak(int64_t iters, int32_t* out) {
  using ds4::cuda::kernels::kMmaPeakChains;
  const uint32_t x = 0x01010101u * (threadIdx.x % 7 + 1);
  const uint32_t a[4] = {x, x ^ 0x00ff00ffu, x + 3, x};
  const uint32_t b[2] = {x ^ 0x7f7f7f7fu, x + 5};
  int32_t c[kMmaPeakChains][4];
#pragma unroll
  for (int k = 0; k < kMmaPeakChains; k++)
#pragma unroll
    for (int j = 0; j < 4; j++) c[k][j] = k + j;
  for (int64_t i = 0; i < iters; i++)
#pragma unroll
    for (int k = 0; k < kMmaPeakChains; k++) ds4::cuda::kernels::mma_s8_16x8x32(c[k], a, b, c[k]);
  int32_t sum = 0;
#pragma unroll
  for (int k = 0; k < kMmaPeakChains; k++)
#pragma unroll
    for (int j = 0; j < 4; j++) sum += c[k][j];
  out[static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}
