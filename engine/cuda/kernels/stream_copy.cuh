#pragma once
// The bandwidth probe: a grid-stride copy of 16-byte words, what scripts/gpu-check.sh divides
// the matvec kernels' GB/s by (read + write bytes count as traffic).
#include <cstdint>

extern "C" __global__ void ds4_stream_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}
