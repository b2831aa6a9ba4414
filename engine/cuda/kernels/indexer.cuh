#pragma once
// The lightning indexer's selection (engine/model/indexer.cpp, Fast) on the device, bit-identical
// to the CPU: score[c] = sum over heads in index order of max(0, <row_c, q_h>) * (w[h] * wscale),
// the dot in the Fast float order (one warp per head, float_dot_warp.cuh); then the rows ds4's greedy top_k passes
// take (strict >, ascending rows: ties to the lower index, scores <= -1e30 and NaN never taken,
// and row 0 added when fewer than top_k rows can be); then the taken rows' addresses in row order,
// the list the sink attention kernel reads. The selection is by rank: row c is taken iff fewer
// than top_k rows come before it (higher score, or equal and lower index): exact and
// deterministic, n^2 / 256 comparisons per block (fine for a few thousand rows).
#include <cstdint>

#include "engine/cuda/indexer_choice.hpp"
#include "engine/cuda/kernels/float_dot_block.cuh"
#include "engine/cuda/kernels/float_dot_warp.cuh"
#include "engine/quant/block_arith.hpp"
#include "engine/quant/kv_sim.hpp"

namespace ds4::cuda::stages {
constexpr unsigned kTopkThreads = 256, kCompactThreads = 1024;
constexpr int32_t kMaxIndexerHeads = 256;
}  // namespace ds4::cuda::stages

namespace ds4::cuda::stages {
// The score of one indexer row in thread 0 (others: unspecified): q n_head x dim (ready), w n_head
// raw weights scaled here by wscale as the CPU scales them. Block: kDotThreads (8 warps; warp k
// takes heads k, k + 8, ...), n_head at most kMaxIndexerHeads.
__device__ __forceinline__ float indexer_score(const float* q, const float* w, int32_t n_head, int32_t dim,
                                               float wscale, const float* row) {
  __shared__ float terms[kMaxIndexerHeads];
  const int warp = static_cast<int>(threadIdx.x / 32), warps = static_cast<int>(blockDim.x / 32);
  for (int32_t h = warp; h < n_head; h += warps) {
    float d = warp_fast_dot(row, q + static_cast<int64_t>(h) * dim, dim);
    if (d < 0.0f) d = 0.0f;
    if (threadIdx.x % 32 == 0) terms[h] = arith::mul(d, arith::mul(w[h], wscale));
  }
  __syncthreads();
  float s = 0.0f;
  if (threadIdx.x == 0)
    for (int32_t h = 0; h < n_head; h++) s = arith::add(s, terms[h]);  // heads in index order
  return s;
}
}  // namespace ds4::cuda::stages

// rows: n rows of dim floats; scores: n. Grid: n blocks; block: kDotThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_indexer_scores(const float* q, const float* w, int32_t n_head, int32_t dim, float wscale, const float* rows,
                       float* scores) {
  const float s =
      ds4::cuda::stages::indexer_score(q, w, n_head, dim, wscale, rows + static_cast<int64_t>(blockIdx.x) * dim);
  if (threadIdx.x == 0) scores[blockIdx.x] = s;
}

// mask[c] = 1 iff row c is among the first top_k in (score desc, index asc) over the rows with
// score > -1e30. Grid: ceil(n / kTopkThreads) blocks of kTopkThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kTopkThreads)
    ds4_indexer_topk(const float* scores, int32_t n, int32_t top_k, uint8_t* mask) {
  namespace st = ds4::cuda::stages;
  __shared__ float tile[st::kTopkThreads];
  const int32_t c = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  const float sc = c < n ? scores[c] : 0.0f;
  int32_t before = 0;
  for (int32_t t0 = 0; t0 < n; t0 += st::kTopkThreads) {
    __syncthreads();
    if (t0 + static_cast<int32_t>(threadIdx.x) < n) tile[threadIdx.x] = scores[t0 + threadIdx.x];
    __syncthreads();
    const int32_t count = n - t0 < static_cast<int32_t>(st::kTopkThreads) ? n - t0 : st::kTopkThreads;
    for (int32_t i = 0; i < count; i++) {
      const float o = tile[i];
      before += (o > sc || (o == sc && t0 + i < c)) ? 1 : 0;
    }
  }
  if (c < n) mask[c] = (sc > -1.0e30f && before < top_k) ? 1 : 0;
}

namespace ds4::cuda::stages {
// A score as a key whose unsigned order is the float order (-0 as +0, so that they tie).
__device__ __forceinline__ uint32_t score_key(float s) {
  const uint32_t u = s == 0.0f ? 0u : ds4::quant::kvsim::f32_bits(s);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}

// Each thread's count in sums[0..nt) becomes the sum of the counts before it (one thread does
// it: nt is at most a block). Returns the total.
__device__ __forceinline__ int32_t exclusive_prefix(int32_t* sums, int32_t nt) {
  int32_t run = 0;
  for (int32_t t = 0; t < nt; t++) {
    const int32_t v = sums[t];
    sums[t] = run;
    run += v;
  }
  return run;
}
}  // namespace ds4::cuda::stages

// The same mask as ds4_indexer_topk in O(n) for long contexts: the top_k-th largest key K by a
// radix select (four 8-bit passes, shared-memory histograms; integer counts are exact in any
// order), then every row above K and, of the rows at K, the lowest-indexed ones (a scan over
// contiguous chunks). Grid: 1 block of kCompactThreads.
namespace ds4::cuda::stages {
__device__ __forceinline__ void indexer_topk_radix(const float* scores, int32_t n, int32_t top_k, uint8_t* mask) {
  namespace st = ds4::cuda::stages;
  __shared__ uint32_t hist[256];
  __shared__ uint32_t prefix, high_mask, n_valid;
  __shared__ int32_t remaining;
  __shared__ int32_t sums[st::kCompactThreads];
  const int32_t tid = static_cast<int32_t>(threadIdx.x), nt = static_cast<int32_t>(blockDim.x);
  const int32_t chunk = (n + nt - 1) / nt, c0 = tid * chunk, c1 = c0 + chunk < n ? c0 + chunk : n;
  if (tid == 0) {
    prefix = high_mask = n_valid = 0;
    remaining = top_k;
  }
  __syncthreads();
  uint32_t mine = 0;
  for (int32_t c = c0; c < c1; c++) mine += scores[c] > -1.0e30f ? 1u : 0u;
  atomicAdd(&n_valid, mine);
  __syncthreads();
  const bool take_all = static_cast<int64_t>(n_valid) <= top_k;
  for (int shift = 24; shift >= 0 && !take_all; shift -= 8) {
    for (int b = tid; b < 256; b += nt) hist[b] = 0;
    __syncthreads();
    for (int32_t c = c0; c < c1; c++) {
      const float sc = scores[c];
      const uint32_t key = st::score_key(sc);
      if (sc > -1.0e30f && (key & high_mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (tid == 0) {  // the bin holding the remaining-th largest key, from the top
      int b = 255;
      while (static_cast<int32_t>(hist[b]) < remaining) remaining -= static_cast<int32_t>(hist[b--]);
      prefix |= static_cast<uint32_t>(b) << shift;
      high_mask |= 255u << shift;
    }
    __syncthreads();
  }
  // Rows above the key, and the first `remaining` rows at it in row order.
  int32_t ties = 0;
  for (int32_t c = c0; c < c1; c++) ties += (!take_all && scores[c] > -1.0e30f && st::score_key(scores[c]) == prefix);
  sums[tid] = ties;
  __syncthreads();
  if (tid == 0) st::exclusive_prefix(sums, nt);
  __syncthreads();
  int32_t before = sums[tid];
  for (int32_t c = c0; c < c1; c++) {
    const float sc = scores[c];
    const uint32_t key = st::score_key(sc);
    uint8_t take = 0;
    if (sc > -1.0e30f) {
      if (take_all || key > prefix) take = 1;
      else if (key == prefix) take = before++ < remaining ? 1 : 0;
    }
    mask[c] = take;
  }
}
}  // namespace ds4::cuda::stages

extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kCompactThreads)
    ds4_indexer_topk_radix(const float* scores, int32_t n, int32_t top_k, uint8_t* mask) {
  ds4::cuda::stages::indexer_topk_radix(scores, n, top_k, mask);
}

// The visible compressed rows: out[k] = base + c * dim for the k-th c with mask[c] set (all = 1:
// every row, and mask, unless null, set to 1). When fewer than top_k rows are set, row 0 is set too
// (the CPU's remaining passes take row 0). *count = the number written. Grid: 1 block of
// kCompactThreads.
namespace ds4::cuda::stages {
__device__ __forceinline__ void indexer_compact(uint8_t* mask, int32_t n, int32_t top_k, int32_t all, const float* base,
                                                int64_t dim, const float** out, int32_t* count) {
  namespace st = ds4::cuda::stages;
  __shared__ int32_t sums[st::kCompactThreads];
  const int32_t tid = static_cast<int32_t>(threadIdx.x), nt = static_cast<int32_t>(blockDim.x);
  const int32_t chunk = (n + nt - 1) / nt, c0 = tid * chunk, c1 = c0 + chunk < n ? c0 + chunk : n;
  int32_t mine = 0;
  for (int32_t c = c0; c < c1; c++) {
    if (all && mask) mask[c] = 1;
    mine += all ? 1 : mask[c];
  }
  sums[tid] = mine;
  __syncthreads();
  if (tid == 0) {
    int32_t total = 0;
    for (int32_t t = 0; t < nt; t++) total += sums[t];
    if (!all && total < top_k && n > 0 && !mask[0]) {  // the CPU's leftover passes pick row 0
      mask[0] = 1;
      sums[0]++;
      total++;
    }
    st::exclusive_prefix(sums, nt);
    *count = total;
  }
  __syncthreads();
  int32_t k = sums[tid];
  for (int32_t c = c0; c < c1; c++)
    if (all || mask[c]) out[k++] = base + c * dim;
}
}  // namespace ds4::cuda::stages

extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kCompactThreads)
    ds4_indexer_compact(uint8_t* mask, int32_t n, int32_t top_k, int32_t all, const float* base, int64_t dim,
                        const float** out, int32_t* count) {
  ds4::cuda::stages::indexer_compact(mask, n, top_k, all, base, dim, out, count);
}

// The choices of R query rows at once (docs/cuda.md §attention-rows), each row's as the kernels
// above make it: choices[r] (indexer_choice.hpp) names its query, rows and list; scores and mask
// hold every row's n entries from its `first` on, the rows' firsts ascending and contiguous.
// Scores: grid sum of n blocks of kDotThreads (block b is entry b).
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_indexer_scores_rows(const ds4::cuda::IndexerChoice* choices, int32_t R, int32_t n_head, int32_t dim,
                            float wscale, float* scores) {
  const int32_t b = static_cast<int32_t>(blockIdx.x);
  int32_t lo = 0, hi = R;  // the row whose entries hold b
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (choices[mid].first <= b) lo = mid;
    else hi = mid;
  }
  const ds4::cuda::IndexerChoice& ch = choices[lo];
  const float* row = reinterpret_cast<const float*>(ch.index_rows) + static_cast<int64_t>(b - ch.first) * dim;
  const float s = ds4::cuda::stages::indexer_score(reinterpret_cast<const float*>(ch.q),
                                                   reinterpret_cast<const float*>(ch.w), n_head, dim, wscale, row);
  if (threadIdx.x == 0) scores[b] = s;
}

// Each row's top_k mask (the radix selection: the same mask as the rank one). Grid: R blocks of
// kCompactThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kCompactThreads)
    ds4_indexer_topk_rows(const ds4::cuda::IndexerChoice* choices, int32_t top_k, const float* scores, uint8_t* mask) {
  const ds4::cuda::IndexerChoice& ch = choices[blockIdx.x];
  ds4::cuda::stages::indexer_topk_radix(scores + ch.first, ch.n, top_k, mask + ch.first);
}

// Each row's chosen rows into its list and their number into its count. Grid: R blocks of
// kCompactThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kCompactThreads)
    ds4_indexer_compact_rows(const ds4::cuda::IndexerChoice* choices, int32_t top_k, uint8_t* mask, int64_t dim) {
  const ds4::cuda::IndexerChoice& ch = choices[blockIdx.x];
  ds4::cuda::stages::indexer_compact(mask + ch.first, ch.n, top_k, 0, reinterpret_cast<const float*>(ch.comp_rows), dim,
                                     reinterpret_cast<const float**>(ch.out), reinterpret_cast<int32_t*>(ch.count));
}
