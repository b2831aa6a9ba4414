#pragma once
// The Fast float dot of two f32 vectors (docs/arithmetic.md §float-dot) computed by one thread
// block of exactly 8 warps, for the stages that need one dot per block (the RMSNorm sum of
// squares, the attention scores): warp s is slice s, so it walks blocks s, s + 8, s + 16, ... in
// ascending order as the contract deals them; lane i forms product i and five __shfl_down_sync
// levels (16, 8, 4, 2, 1) are the block's halving tree (lane i adds lane i + h, as
// fast::block_tree32 does); lane 0 enters the block value into the slice with one add, and
// thread 0 takes the eight slices through fast::tree. Bit-identical to dot_f32_fast_generic.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::stages {
namespace arith = ds4::quant::arith;
namespace fast = ds4::quant::fast;

constexpr unsigned kDotThreads = 32 * fast::kSlices;  // the block size the dot needs
constexpr unsigned kAllLanes = 0xffffffffu;

// Returns dot(a, b) of n elements in thread 0 (other threads: unspecified). `slices` is shared
// memory for fast::kSlices floats. Every thread of the block must call it (it synchronises).
__device__ __forceinline__ float block_fast_dot(const float* a, const float* b, int64_t n, float* slices) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  float acc = 0.0f;
  for (int64_t blk = warp; blk < nb; blk += fast::kSlices) {
    const int64_t k = blk * fast::kFloatBlock + lane;
    float p = k < n ? arith::mul(a[k], b[k]) : 0.0f;  // a short last block is padded with +0.0
#pragma unroll
    for (int h = fast::kFloatBlock / 2; h >= 1; h /= 2) p = arith::add(p, __shfl_down_sync(kAllLanes, p, h));
    acc = arith::add(acc, p);  // meaningful in lane 0 only
  }
  __syncthreads();  // `slices` may still be read by a previous call
  if (lane == 0) slices[warp] = acc;
  __syncthreads();
  return threadIdx.x == 0 ? fast::tree(slices) : 0.0f;
}

}  // namespace ds4::cuda::stages
