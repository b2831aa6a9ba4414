#pragma once
// The attention's grouped low-rank output projection on the device (model::grouped_output,
// engine/model/attention.cpp): group g multiplies rows [g * rank, (g + 1) * rank) of the Q8_0
// matrix output_a with its heads' slice of each token's quantized activation row (Q8_0 blocks
// from element g * group_dim on). Every output is matvec_q8_0_row's, the plain matvec's bits;
// only the addresses differ: the weight rows and activation slice of the group, and the output
// written straight into low[t][g][r].
#include <cstdint>

#include "engine/cuda/kernels/matvec.cuh"

namespace ds4::cuda::kernels {

// ceil(rank / 4) thread blocks per group, group-major; one warp a row, all N tokens at once.
template <int N>
__device__ void grouped_output(const uint8_t* __restrict__ w, int32_t n_group, int64_t rank, int64_t group_dim,
                               const uint8_t* __restrict__ act, int64_t act_row_bytes, float* __restrict__ low) {
  const int64_t row_blocks = (rank + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t g = blockIdx.x / row_blocks;
  const int64_t r = (blockIdx.x % row_blocks) * kWarpsPerBlock + threadIdx.x / 32;
  if (r >= rank) return;
  const int64_t row_bytes = group_dim / 32 * 34, act_off = group_dim / 32 * 36 * g;  // Q8_0, Q8_0 activations
  matvec_q8_0_row<N>(w + (g * rank + r) * row_bytes, group_dim, act + act_off, act_row_bytes, low + g * rank + r,
                     n_group * rank);
}

}  // namespace ds4::cuda::kernels

#define DS4_GROUPED_OUTPUT_WIDTH(N) \
  extern "C" __global__ void __launch_bounds__(128) \
      ds4_grouped_output_q8_0_w##N(const uint8_t* w, int32_t n_group, int64_t rank, int64_t group_dim, \
                                   const uint8_t* act, int64_t act_row_bytes, float* low) { \
    ds4::cuda::kernels::grouped_output<N>(w, n_group, rank, group_dim, act, act_row_bytes, low); \
  }
DS4_MATVEC_FOR_WIDTHS(DS4_GROUPED_OUTPUT_WIDTH)
#undef DS4_GROUPED_OUTPUT_WIDTH
