#pragma once
// MXFP4, Q2_K, Q4_K and IQ2_XXS matrix-vector products for 1..8 activation rows in the Fast
// order (docs/arithmetic.md §slices, §quantized-dot), bit-identical to the generic CPU Fast dots.
// One kernel template for the four: each format's block step is the `__host__ __device__`
// description in engine/quant/fast_blocks.hpp that the generic CPU kernels run too (integer
// block sums of block_sums.hpp, block update of fast_order.hpp), so only the lane split below is
// particular to the device (docs/cuda.md §order). The integer work uses plain int32 arithmetic
// per element, not __dp4a: its speed has not been measured on any GPU.
#include <cstdint>

#include "engine/cuda/kernels/matvec.cuh"
#include "engine/quant/fast_blocks.hpp"

namespace ds4::cuda::kernels {

// Weight rows are cols / Block::kElems blocks of Block::Weight; activation rows are as many
// Block::Act blocks (Q8_0 activation blocks for MXFP4, Q8_K for the others), act_row_bytes apart
// (a multiple of 4). Lanes 4s..4s+3 own slice s, as in matvec_q8_0: at step i the warp takes the
// eight adjacent blocks 8i..8i+7, lanes 4s..4s+3 block 8i+s, lane 4s+q the units
// [q * kUnits / 4, (q + 1) * kUnits / 4) of it (Q2_K: 4 sub-blocks, Q4_K: 2, IQ2_XXS: 2 groups,
// MXFP4: 4 bytes = 8 elements). Two integer __shfl_xor_sync levels (exact) give the block's sums
// in all four lanes, each applies the block update (the same bits in all four), and three float
// __shfl_xor_sync levels are the slice tree (xor 4, 8, 16: slice s with s^1, s^2, s^4).
// matvec_blocks_rows_at is one warp's row (w: its first block) against N activation rows wherever
// they are: act_at(t) is row t, out_at(t) where its output goes (the MoE's grouped pairs gather
// theirs); matvec_blocks_row takes rows act_row_bytes apart, out[t * out_stride] for row t.
template <int N, class Block, class ActAt, class OutAt>
__device__ void matvec_blocks_rows_at(const uint8_t* __restrict__ w, int64_t cols, ActAt act_at, OutAt out_at) {
  using Weight = typename Block::Weight;
  using Act = typename Block::Act;
  constexpr int kLanesPerBlock = 4, kPer = Block::kUnits / kLanesPerBlock;
  static_assert(Block::kUnits % kLanesPerBlock == 0 && fast::kSlices * kLanesPerBlock == 32);
  const int lane = threadIdx.x % 32;
  const int64_t nb = cols / Block::kElems;
  const int s = lane / kLanesPerBlock, first = (lane % kLanesPerBlock) * kPer;
  const Weight* wrow = reinterpret_cast<const Weight*>(w);
  float acc[N];
#pragma unroll
  for (int t = 0; t < N; t++) acc[t] = 0.0f;
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
    const int64_t b = b0 + s;
    const bool live = b < nb;
    fast::IntSums sums[N];
#pragma unroll
    for (int t = 0; t < N; t++) {
      sums[t] = {0, 0};
      if (live) {
        const Act* a = reinterpret_cast<const Act*>(act_at(t)) + b;
        sums[t] = Block::sums(wrow[b], *a, first, kPer);
      }
      sums[t].isum += __shfl_xor_sync(kFull, sums[t].isum, 1);
      sums[t].summs += __shfl_xor_sync(kFull, sums[t].summs, 1);
      sums[t].isum += __shfl_xor_sync(kFull, sums[t].isum, 2);
      sums[t].summs += __shfl_xor_sync(kFull, sums[t].summs, 2);
    }
    if (live) {
#pragma unroll
      for (int t = 0; t < N; t++) {
        const Act* a = reinterpret_cast<const Act*>(act_at(t)) + b;
        acc[t] = Block::update(acc[t], wrow[b], *a, sums[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < N; t++) {
    float v = acc[t];
    v = arith::add(v, __shfl_xor_sync(kFull, v, 4));
    v = arith::add(v, __shfl_xor_sync(kFull, v, 8));
    v = arith::add(v, __shfl_xor_sync(kFull, v, 16));
    if (lane == 0) *out_at(t) = Block::finish(v);
  }
}

template <int N, class Block>
__device__ void matvec_blocks_row(const uint8_t* __restrict__ w, int64_t cols, const uint8_t* __restrict__ act,
                                  int64_t act_row_bytes, float* __restrict__ out, int64_t out_stride) {
  matvec_blocks_rows_at<N, Block>(
      w, cols, [=](int t) { return act + t * act_row_bytes; }, [=](int t) { return out + t * out_stride; });
}

template <int N, class Block>
__device__ void matvec_blocks(const uint8_t* __restrict__ w, int64_t rows, int64_t cols,
                              const uint8_t* __restrict__ act, int64_t act_row_bytes, float* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t row_bytes = cols / Block::kElems * static_cast<int64_t>(sizeof(typename Block::Weight));
  matvec_blocks_row<N, Block>(w + row * row_bytes, cols, act, act_row_bytes, out + row, rows);
}

}  // namespace ds4::cuda::kernels

#define DS4_MATVEC_BLOCKS(NAME, BLOCK, N) \
  extern "C" __global__ void __launch_bounds__(128) ds4_matvec_##NAME##_w##N( \
      const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, float* out) { \
    ds4::cuda::kernels::matvec_blocks<N, ds4::quant::fast::BLOCK>(w, rows, cols, act, act_row_bytes, out); \
  }
#define DS4_MATVEC_BLOCKS_WIDTH(N) \
  DS4_MATVEC_BLOCKS(mxfp4, Mxfp4Block, N) \
  DS4_MATVEC_BLOCKS(q2_k, Q2KBlock, N) \
  DS4_MATVEC_BLOCKS(q4_k, Q4KBlock, N) \
  DS4_MATVEC_BLOCKS(iq2_xxs, Iq2XxsBlock, N)
DS4_MATVEC_FOR_WIDTHS(DS4_MATVEC_BLOCKS_WIDTH)
#undef DS4_MATVEC_BLOCKS_WIDTH
#undef DS4_MATVEC_BLOCKS
