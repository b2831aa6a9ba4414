#pragma once
// The Fast float dot of two f32 vectors (docs/arithmetic.md §float-dot) computed by one warp, for
// stages that need many short dots at once (the indexer's 64 heads per row): the warp walks the
// blocks of slice 0, then of slice 1, ..., each slice's blocks s, s + 8, ... in ascending order;
// lane i forms product i of a block and five __shfl_down_sync levels (16..1) are its halving tree;
// lane 0 adds the block into its slice and takes fast::tree of the eight slices. The same
// operations as float_dot_block.cuh (and dot_f32_fast_generic) with no block barrier.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::stages {

// Returns dot(a, b) of n elements in lane 0 of the calling warp (other lanes: unspecified). All
// 32 lanes must call it.
__device__ __forceinline__ float warp_fast_dot(const float* a, const float* b, int64_t n) {
  namespace arith = ds4::quant::arith;
  namespace fast = ds4::quant::fast;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  float slices[fast::kSlices];
#pragma unroll
  for (int s = 0; s < fast::kSlices; s++) {
    float acc = 0.0f;
    for (int64_t blk = s; blk < nb; blk += fast::kSlices) {
      const int64_t k = blk * fast::kFloatBlock + lane;
      float p = k < n ? arith::mul(a[k], b[k]) : 0.0f;  // a short last block is padded with +0.0
#pragma unroll
      for (int h = fast::kFloatBlock / 2; h >= 1; h /= 2) p = arith::add(p, __shfl_down_sync(0xffffffffu, p, h));
      acc = arith::add(acc, p);  // meaningful in lane 0 only
    }
    slices[s] = acc;
  }
  return fast::tree(slices);
}

}  // namespace ds4::cuda::stages
