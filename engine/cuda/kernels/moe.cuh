#pragma once
// The mixture-of-experts FFN on the device in the Fast order, bit-identical to moe_forward with
// Exec.exact = false (engine/model/moe.cpp; docs/cuda.md §stages): the router's selection and
// weights, the routed experts' matvecs addressed by the device-side expert ids, the clamped
// SwiGLU times the router weight, and the sum over slots plus the shared expert. The per-element
// arithmetic is engine/model/moe_arith.hpp, which the CPU runs too; the expert matvecs are the
// plain matvec's row code (matvec_blocks.cuh) with another address.
#include <cstdint>

#include "engine/cuda/kernels/gemm_rows.cuh"
#include "engine/cuda/kernels/matvec_blocks.cuh"
#include "engine/model/moe_arith.hpp"

namespace ds4::cuda::kernels {

constexpr int kMaxRouterExperts = 1024;  // 32 per lane: the lane's taken mask is one word
constexpr int kMaxExpertsUsed = 32;      // model::RoutedChoice

// One warp per token. Lane l computes p_i = sqrt(softplus(z_i)) and score_i = p_i (+ bias_i) for
// i = l, l + 32, ... into shared memory; then n_used rounds of a warp argmax over the untaken
// (score, index) pairs (higher score, then lower index: moe_arith::ranks_before, five xor levels,
// every lane ends with the same winner), which is the set and order of ds4's insertion top-k for
// NaN-free scores. With a NaN score lane 0 runs the insertion itself (moe_arith::topk_desc).
// probs (the p, [T][n_expert]) is written only when not null.
// Hash layers take row tokens[t] of tid2eid instead. Lane 0 then normalises the weights. An
// out-of-range token or tid2eid entry sets *error (when given) and writes expert -1, weight NaN.
__device__ inline void moe_route(const float* __restrict__ logits, int32_t n_expert, int32_t k,
                                 const float* __restrict__ bias, const int32_t* __restrict__ tid2eid, int64_t n_vocab,
                                 const int32_t* __restrict__ tokens, float scale, float* __restrict__ probs,
                                 int32_t* __restrict__ ids, float* __restrict__ weights, int32_t* __restrict__ error) {
  namespace ma = ds4::model::moe_arith;
  __shared__ float sp[kMaxRouterExperts], ss[kMaxRouterExperts];
  __shared__ int32_t chosen[kMaxExpertsUsed];
  const int64_t t = blockIdx.x;
  const int lane = threadIdx.x;
  bool nan = false;
  for (int32_t i = lane; i < n_expert; i += 32) {
    const float p = ma::router_prob(logits[t * n_expert + i]);
    const float s = bias ? arith::add(p, bias[i]) : p;
    sp[i] = p;
    ss[i] = s;
    if (probs) probs[t * n_expert + i] = p;
    nan = nan || fast::is_nan(s);
  }
  for (int d = 1; d < 32; d *= 2) {
    const bool other = __shfl_xor_sync(kFull, nan ? 1 : 0, d) != 0;  // every lane shuffles
    nan = nan || other;
  }
  __syncthreads();
  bool bad = false;
  if (tid2eid) {
    if (lane == 0) {
      const int32_t tok = tokens[t];
      bad = tok < 0 || tok >= n_vocab;
      for (int32_t j = 0; j < k; j++) {
        const int32_t e = bad ? -1 : tid2eid[static_cast<int64_t>(tok) * k + j];
        bad = bad || e < 0 || e >= n_expert;
        chosen[j] = e;
      }
    }
  } else if (nan) {
    if (lane == 0) ma::topk_desc(ss, static_cast<uint32_t>(n_expert), static_cast<uint32_t>(k), chosen);
  } else {
    uint32_t taken = 0;  // bit m: expert lane + 32 m
    for (int32_t j = 0; j < k; j++) {
      float bs = arith::bits_to_f32(0xff800000u);  // -inf with the sentinel index: any expert beats it
      int32_t bi = 0x7fffffff;
      for (int32_t i = lane, m = 0; i < n_expert; i += 32, m++)
        if (!(taken >> m & 1u) && ma::ranks_before(ss[i], i, bs, bi)) {
          bs = ss[i];
          bi = i;
        }
      for (int d = 1; d < 32; d *= 2) {
        const float os = __shfl_xor_sync(kFull, bs, d);
        const int32_t oi = __shfl_xor_sync(kFull, bi, d);
        if (ma::ranks_before(os, oi, bs, bi)) {
          bs = os;
          bi = oi;
        }
      }
      if (bi % 32 == lane) taken |= 1u << (bi / 32);
      if (lane == 0) chosen[j] = bi;
    }
  }
  if (lane != 0) return;
  if (tid2eid && bad) {
    if (error) *error = 1;
    for (int32_t j = 0; j < k; j++) {
      ids[t * k + j] = -1;
      weights[t * k + j] = arith::bits_to_f32(0x7fc00000u);
    }
    return;
  }
  float w[kMaxExpertsUsed];
  ma::normalise_weights(chosen, static_cast<uint32_t>(k), sp, scale, w);
  for (int32_t j = 0; j < k; j++) {
    ids[t * k + j] = chosen[j];
    weights[t * k + j] = w[j];
  }
}

// Pair p's output rows [p * rows, (p + 1) * rows) = expert ids[p]'s matrix (expert_bytes apart
// in w) times activation row p / pairs_per_act; ceil(rows / 4) thread blocks per pair, one warp
// a row, pair-major (blockIdx.x = p * row_blocks + row block). An id outside [0, n_expert)
// gives NaN rows. Each output is matvec_blocks_row's, the plain matvec's bits.
template <class Block>
__device__ void moe_matvec(const uint8_t* __restrict__ w, int64_t expert_bytes, int32_t n_expert, int64_t rows,
                           int64_t cols, const int32_t* __restrict__ ids, const uint8_t* __restrict__ act,
                           int64_t act_row_bytes, int32_t pairs_per_act, float* __restrict__ out) {
  const int64_t row_blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t pair = blockIdx.x / row_blocks;
  const int64_t row = (blockIdx.x % row_blocks) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int32_t e = ids[pair];
  float* o = out + pair * rows + row;
  if (e < 0 || e >= n_expert) {
    if (threadIdx.x % 32 == 0) *o = arith::bits_to_f32(0x7fc00000u);
    return;
  }
  const int64_t row_bytes = cols / Block::kElems * static_cast<int64_t>(sizeof(typename Block::Weight));
  matvec_blocks_row<1, Block>(w + e * expert_bytes + row * row_bytes, cols, act + pair / pairs_per_act * act_row_bytes,
                              act_row_bytes, o, rows);
}

// Pairs grouped by expert (docs/cuda.md §stages, expert grouping): a tile is up to kMoeGroupTile
// pairs of one expert, whose rows are read once for all of them: by the int8 tensor-core GEMM
// (moe_gemm.cuh) when it has more than kMoeTile pairs, else by the grouped matvec.
constexpr int kMoeTile = 8;        // the widest matvec row code
constexpr int kMoeGroupTile = 32;  // the GEMM kernels' token tile
constexpr int kMoeGroupThreads = 1024;

// One block: counts per bucket (expert ids; bucket n_expert for ids outside [0, n_expert)) by
// shared-memory atomics (exact), then thread 0 lays the buckets out in id order, the pairs of a
// bucket in pair order (order[]), and cuts each bucket into tiles of at most kMoeGroupTile pairs:
// tiles[3 * i] = bucket, tiles[3 * i + 1] = first entry of order[], tiles[3 * i + 2] = pairs;
// *n_tiles = their number.
__device__ inline void moe_group(const int32_t* __restrict__ ids, int32_t n_pairs, int32_t n_expert,
                                 int32_t* __restrict__ order, int32_t* __restrict__ tiles,
                                 int32_t* __restrict__ n_tiles) {
  __shared__ uint32_t count[kMaxRouterExperts + 1];
  const auto bucket = [&](int32_t p) { return ids[p] >= 0 && ids[p] < n_expert ? ids[p] : n_expert; };
  for (int32_t b = static_cast<int32_t>(threadIdx.x); b <= n_expert; b += static_cast<int32_t>(blockDim.x))
    count[b] = 0u;
  __syncthreads();
  for (int32_t p = static_cast<int32_t>(threadIdx.x); p < n_pairs; p += static_cast<int32_t>(blockDim.x))
    atomicAdd(&count[bucket(p)], 1u);
  __syncthreads();
  if (threadIdx.x != 0) return;
  int32_t n = 0, at = 0;
  for (int32_t b = 0; b <= n_expert; b++) {  // count[b] becomes the bucket's next entry
    const int32_t c = static_cast<int32_t>(count[b]);
    for (int32_t k = 0; k < c; k += kMoeGroupTile) {
      tiles[3 * n] = b;
      tiles[3 * n + 1] = at + k;
      tiles[3 * n + 2] = c - k < kMoeGroupTile ? c - k : kMoeGroupTile;
      n++;
    }
    count[b] = static_cast<uint32_t>(at);
    at += c;
  }
  for (int32_t p = 0; p < n_pairs; p++) order[count[bucket(p)]++] = p;  // bucket order, then pair order
  *n_tiles = n;
}

// Tile `tile` of moe_group's layout as both grouped kernels (this matvec, moe_gemm.cuh's GEMM)
// read it: its bucket (the expert, or n_expert for bad ids; -1 past *n_tiles) and its pairs as
// rows (GemmRows: pair p reads activation row p / pairs_per_act and writes output row p).
struct MoeTile {
  int32_t bucket = -1;
  GemmRows x;
};
__device__ inline MoeTile moe_tile(int64_t tile, const int32_t* __restrict__ order, const int32_t* __restrict__ tiles,
                                   const int32_t* __restrict__ n_tiles, const uint8_t* act, int64_t act_row_bytes,
                                   int32_t pairs_per_act, float* out, int64_t rows) {
  if (tile >= *n_tiles) return {};
  return {tiles[3 * tile],
          GemmRows{act, act_row_bytes, out, rows, order + tiles[3 * tile + 1], pairs_per_act, tiles[3 * tile + 2]}};
}

// Weight row `row` (w: its first block) against the tile's N pairs.
template <class Block, int N>
__device__ void moe_tile_row(const uint8_t* __restrict__ w, int64_t cols, GemmRows x, int64_t row) {
  matvec_blocks_rows_at<N, Block>(
      w, cols, [=](int t) { return x.act_row(t); }, [=](int t) { return x.out_row_of(t) + row; });
}

// moe_matvec over the tiles of at most kMoeTile pairs: block (tile, four rows) runs the tile's
// pairs through its expert's rows at once with the width-n row code (the same bits as n width-1
// rows), so the expert is read once per tile instead of once per pair. Tiles past *n_tiles and
// larger tiles (moe_gemm.cuh's) return; bucket n_expert gives NaN rows, whatever its size.
template <class Block>
__device__ void moe_matvec_grouped(const uint8_t* __restrict__ w, int64_t expert_bytes, int32_t n_expert, int64_t rows,
                                   int64_t cols, const int32_t* __restrict__ order, const int32_t* __restrict__ tiles,
                                   const int32_t* __restrict__ n_tiles, const uint8_t* __restrict__ act,
                                   int64_t act_row_bytes, int32_t pairs_per_act, float* __restrict__ out) {
  const int64_t row_blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t row = (blockIdx.x % row_blocks) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const MoeTile m =
      moe_tile(blockIdx.x / row_blocks, order, tiles, n_tiles, act, act_row_bytes, pairs_per_act, out, rows);
  if (m.bucket < 0 || (m.x.n > kMoeTile && m.bucket != n_expert)) return;
  if (m.bucket == n_expert) {
    if (threadIdx.x % 32 == 0)
      for (int32_t t = 0; t < m.x.n; t++) m.x.out_row_of(t)[row] = arith::bits_to_f32(0x7fc00000u);
    return;
  }
  const int64_t row_bytes = cols / Block::kElems * static_cast<int64_t>(sizeof(typename Block::Weight));
  const uint8_t* wr = w + m.bucket * expert_bytes + row * row_bytes;
  switch (m.x.n) {
    case 1: moe_tile_row<Block, 1>(wr, cols, m.x, row); break;
    case 2: moe_tile_row<Block, 2>(wr, cols, m.x, row); break;
    case 3: moe_tile_row<Block, 3>(wr, cols, m.x, row); break;
    case 4: moe_tile_row<Block, 4>(wr, cols, m.x, row); break;
    case 5: moe_tile_row<Block, 5>(wr, cols, m.x, row); break;
    case 6: moe_tile_row<Block, 6>(wr, cols, m.x, row); break;
    case 7: moe_tile_row<Block, 7>(wr, cols, m.x, row); break;
    default: moe_tile_row<Block, 8>(wr, cols, m.x, row); break;
  }
}

}  // namespace ds4::cuda::kernels

extern "C" __global__ void __launch_bounds__(ds4::cuda::kernels::kMoeGroupThreads)
    ds4_moe_group(const int32_t* ids, int32_t n_pairs, int32_t n_expert, int32_t* order, int32_t* tiles,
                  int32_t* n_tiles) {
  ds4::cuda::kernels::moe_group(ids, n_pairs, n_expert, order, tiles, n_tiles);
}

extern "C" __global__ void ds4_moe_route(const float* logits, int32_t n_expert, int32_t k, const float* bias,
                                         const int32_t* tid2eid, int64_t n_vocab, const int32_t* tokens, float scale,
                                         float* probs, int32_t* ids, float* weights, int32_t* error) {
  ds4::cuda::kernels::moe_route(logits, n_expert, k, bias, tid2eid, n_vocab, tokens, scale, probs, ids, weights, error);
}

// mid[i] = swiglu(gate[i], up[i]) (times weights[i / n_ff] when weights is not null): routed
// pairs' hidden rows, or the shared expert's with no weight. One thread an element.
extern "C" __global__ void ds4_moe_swiglu(const float* gate, const float* up, const float* weights, int64_t n_rows,
                                          int64_t n_ff, float clamp, float* mid) {
  namespace ma = ds4::model::moe_arith;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * n_ff) return;
  mid[i] = weights ? ma::routed_mid(gate[i], up[i], clamp, weights[i / n_ff]) : ma::swiglu(gate[i], up[i], clamp);
}

// out[t][r] = (sum over slots k in order from 0 of down[t * n_used + k][r]) + shared[t][r],
// moe_forward's order. One thread an element of out.
extern "C" __global__ void ds4_moe_sum(const float* down, const float* shared, int64_t n_tokens, int32_t n_used,
                                       int64_t n_embd, float* out) {
  namespace arith = ds4::quant::arith;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tokens * n_embd) return;
  const int64_t t = i / n_embd, r = i % n_embd;
  float acc = 0.0f;
  for (int32_t k = 0; k < n_used; k++) acc = arith::add(acc, down[(t * n_used + k) * n_embd + r]);
  out[i] = arith::add(acc, shared[i]);
}

#define DS4_MOE_MATVEC(NAME, BLOCK) \
  extern "C" __global__ void __launch_bounds__(128) ds4_moe_matvec_##NAME( \
      const uint8_t* w, int64_t expert_bytes, int32_t n_expert, int64_t rows, int64_t cols, const int32_t* ids, \
      const uint8_t* act, int64_t act_row_bytes, int32_t pairs_per_act, float* out) { \
    ds4::cuda::kernels::moe_matvec<ds4::quant::fast::BLOCK>(w, expert_bytes, n_expert, rows, cols, ids, act, \
                                                            act_row_bytes, pairs_per_act, out); \
  }
DS4_MOE_MATVEC(mxfp4, Mxfp4Block)
DS4_MOE_MATVEC(q2_k, Q2KBlock)
DS4_MOE_MATVEC(q4_k, Q4KBlock)
DS4_MOE_MATVEC(iq2_xxs, Iq2XxsBlock)
#undef DS4_MOE_MATVEC

#define DS4_MOE_MATVEC_GROUPED(NAME, BLOCK) \
  extern "C" __global__ void __launch_bounds__(128) \
      ds4_moe_matvec_grouped_##NAME(const uint8_t* w, int64_t expert_bytes, int32_t n_expert, int64_t rows, \
                                    int64_t cols, const int32_t* order, const int32_t* tiles, const int32_t* n_tiles, \
                                    const uint8_t* act, int64_t act_row_bytes, int32_t pairs_per_act, float* out) { \
    ds4::cuda::kernels::moe_matvec_grouped<ds4::quant::fast::BLOCK>( \
        w, expert_bytes, n_expert, rows, cols, order, tiles, n_tiles, act, act_row_bytes, pairs_per_act, out); \
  }
DS4_MOE_MATVEC_GROUPED(mxfp4, Mxfp4Block)
DS4_MOE_MATVEC_GROUPED(q2_k, Q2KBlock)
DS4_MOE_MATVEC_GROUPED(q4_k, Q4KBlock)
DS4_MOE_MATVEC_GROUPED(iq2_xxs, Iq2XxsBlock)
#undef DS4_MOE_MATVEC_GROUPED
