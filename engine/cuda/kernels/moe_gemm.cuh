#pragma once
// The routed experts' tiles of more than kMoeTile pairs (kernels/moe.cuh moe_group) on int8 tensor
// cores: the prefill GEMM kernels (gemm_blocks32.cuh, gemm_q4_k.cuh, gemm_q2_k.cuh,
// gemm_iq2_xxs.cuh) over the tile's expert matrix, with the tile's pairs as the token rows
// (gemm_rows.cuh: activation rows gathered, output rows scattered). Each output is the plain
// GEMM's, hence the matvec's and the CPU's Fast dot (docs/cuda.md §stages, expert GEMM).
#include <cstdint>

#include "engine/cuda/kernels/gemm_blocks32.cuh"
#include "engine/cuda/kernels/gemm_iq2_xxs.cuh"
#include "engine/cuda/kernels/gemm_q2_k.cuh"
#include "engine/cuda/kernels/gemm_q4_k.cuh"
#include "engine/cuda/kernels/moe.cuh"

namespace ds4::cuda::kernels {

// Block (tile, row tile), tile-major: consecutive blocks share the tile's activation rows and walk
// its expert's rows. Tiles past *n_tiles, of at most kMoeTile pairs (the grouped matvec's) or of
// bucket n_expert (bad ids: the grouped matvec writes their NaN rows) return before any barrier,
// the whole block alike. `gemm(expert weights, x, r0)` runs the format's tile body.
template <int kTileRows, class Gemm>
__device__ void moe_gemm_grouped(const uint8_t* __restrict__ w, int64_t expert_bytes, int32_t n_expert, int64_t rows,
                                 const int32_t* __restrict__ order, const int32_t* __restrict__ tiles,
                                 const int32_t* __restrict__ n_tiles, const uint8_t* __restrict__ act,
                                 int64_t act_row_bytes, int32_t pairs_per_act, float* __restrict__ out, Gemm gemm) {
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  const MoeTile m =
      moe_tile(blockIdx.x / row_tiles, order, tiles, n_tiles, act, act_row_bytes, pairs_per_act, out, rows);
  if (m.bucket < 0 || m.x.n <= kMoeTile || m.bucket == n_expert) return;
  gemm(w + m.bucket * expert_bytes, m.x, static_cast<int64_t>(blockIdx.x % row_tiles) * kTileRows);
}

// MXFP4's tile body at 32 tokens (one warp a slice).
__device__ inline void gemm_mxfp4_t32(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, GemmRows x, int64_t t0,
                                      int64_t r0) {
  gemm_blocks32<1, GemmMxfp4Weight>(w, rows, cols, x, t0, r0);
}

}  // namespace ds4::cuda::kernels

// ds4_moe_gemm_grouped_<format>: the arguments of ds4_moe_matvec_grouped_<format>; 256 threads, a
// grid of max_tiles * ceil(rows / TILE_ROWS) blocks.
#define DS4_MOE_GEMM_GROUPED(NAME, TILE_ROWS, BODY) \
  extern "C" __global__ void __launch_bounds__(256) \
      ds4_moe_gemm_grouped_##NAME(const uint8_t* w, int64_t expert_bytes, int32_t n_expert, int64_t rows, \
                                  int64_t cols, const int32_t* order, const int32_t* tiles, const int32_t* n_tiles, \
                                  const uint8_t* act, int64_t act_row_bytes, int32_t pairs_per_act, float* out) { \
    namespace k = ds4::cuda::kernels; \
    k::moe_gemm_grouped<TILE_ROWS>( \
        w, expert_bytes, n_expert, rows, order, tiles, n_tiles, act, act_row_bytes, pairs_per_act, out, \
        [=](const uint8_t* ew, k::GemmRows x, int64_t r0) { k::BODY(ew, rows, cols, x, 0, r0); }); \
  }
DS4_MOE_GEMM_GROUPED(mxfp4, ds4::cuda::kernels::kGemmRows, gemm_mxfp4_t32)
DS4_MOE_GEMM_GROUPED(q2_k, ds4::cuda::kernels::kGemmQ2KRows, gemm_q2_k)
DS4_MOE_GEMM_GROUPED(q4_k, ds4::cuda::kernels::kGemmQ4KRows, gemm_q4_k)
DS4_MOE_GEMM_GROUPED(iq2_xxs, ds4::cuda::kernels::kGemmIq2Rows, gemm_iq2_xxs)
#undef DS4_MOE_GEMM_GROUPED
