#pragma once
// The slice tree of the GEMM kernels (gemm_blocks32.cuh, gemm_q4_k.cuh): warps s = 0..7 of a token
// half hold slice s's partial sums of the same outputs in the same registers; the contract's tree
// ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) (docs/arithmetic.md §slices) is formed element
// by element in the slice-0 warp: at level h (1, 2, 4) warp s + h hands its partials to warp s
// (s a multiple of 2h) through shared memory, two pairs a round. Every thread of the block calls it.
#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::kernels {

template <int kAcc, int W>
__device__ __forceinline__ void gemm_slice_tree(float* flat, float (&partial)[W][2][kAcc][32], int s, int half,
                                                int lane) {
  constexpr int kSlices = quant::fast::kSlices;
#pragma unroll
  for (int h = 1; h < kSlices; h *= 2)
#pragma unroll
    for (int first = 0; first < kSlices / (2 * h); first += 2) {
      const int pair = s / (2 * h) - first;  // this round's pairs: first, first + 1
      const bool in_round = pair == 0 || pair == 1;
      if (in_round && s % (2 * h) == h)
#pragma unroll
        for (int i = 0; i < kAcc; i++) partial[half][pair][i][lane] = flat[i];
      __syncthreads();
      if (in_round && s % (2 * h) == 0)
#pragma unroll
        for (int i = 0; i < kAcc; i++) flat[i] = quant::arith::add(flat[i], partial[half][pair][i][lane]);
      __syncthreads();
    }
}

}  // namespace ds4::cuda::kernels
