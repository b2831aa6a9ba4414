#pragma once
// Sink attention of query tokens in the Fast order (docs/arithmetic.md §attention), bit-identical
// to the CPU's engine/model/attention_fast.cpp. A query's visible rows come as a device array of
// row addresses (raw window oldest first, then the allowed compressed rows), each row d floats and
// both key and value, so the raw ring and the compressed store need no gathering.
// Pass 1 (scores): one 8-warp block per (row, head) takes the Fast float dot (float_dot_block.cuh),
// s[j * n_head + h] = fl(dot * scale). Pass 2 (combine): one block per (query, head), thread i owns
// output element i and keeps its eight slice accumulators in registers; the block computes the
// weights e[j] = exp(s[j] - m) a tile at a time into shared memory, then every thread adds row j
// into slice j mod 8 (a multiply, then an add: no FMA). The `_rows` kernels do T queries in one
// launch each, every query with its own row list (docs/cuda.md §attention-rows): the same bodies.
#include <cstdint>

#include "engine/cuda/kernels/dynamic_shared.cuh"
#include "engine/cuda/kernels/float_dot_block.cuh"
#include "engine/quant/fast_math.hpp"

namespace ds4::cuda::stages {

// Pass 1 for row j of a query, head h: s = fl(dot(row, q_h) * scale) into *s by thread 0.
__device__ __forceinline__ void attn_score(const float* q, const float* row, int64_t h, int64_t d, float scale,
                                           float* s) {
  __shared__ float slices[ds4::quant::fast::kSlices];
  const float dot = block_fast_dot(row, q + h * d, d, slices);
  if (threadIdx.x == 0) *s = arith::mul(dot, scale);
}

// Pass 2 for head h of a query over its n rows: s holds n x n_head scores, out n_head x d floats.
// Dynamic shared memory: one float per thread.
__device__ __forceinline__ void attn_combine(const float* s, const float* const* rows, int32_t n, int32_t n_head,
                                             int32_t d, int h, const float* sinks, float* out) {
  DS4_DYNAMIC_SHARED(float, tile);
  __shared__ float shared_m, shared_den;
  const int tid = static_cast<int>(threadIdx.x);
  const int nt = static_cast<int>(blockDim.x);  // a multiple of 32, so every tile starts at slice 0
  // m = max(sink, s[j]...): exact in any order (docs/arithmetic.md §attention); the sign of a
  // zero maximum cannot change any s - m that exp sees.
  float m = sinks[h];
  for (int j = tid; j < n; j += nt) {
    const float v = s[static_cast<int64_t>(j) * n_head + h];
    m = m < v ? v : m;
  }
  tile[tid] = m;
  __syncthreads();
  if (tid == 0) {
    for (int t = 1; t < nt; t++) m = m < tile[t] ? tile[t] : m;
    shared_m = m;
  }
  __syncthreads();
  m = shared_m;
  const bool mine = tid < d;
  float o[fast::kSlices], den[fast::kSlices];
#pragma unroll
  for (int sl = 0; sl < fast::kSlices; sl++) o[sl] = den[sl] = 0.0f;
  for (int j0 = 0; j0 < n; j0 += nt) {
    __syncthreads();  // the previous tile (and the maximum's scratch) has been read
    if (j0 + tid < n) tile[tid] = fast::exp(fast::sub(s[static_cast<int64_t>(j0 + tid) * n_head + h], m));
    __syncthreads();
    const int count = n - j0 < nt ? n - j0 : nt;
    for (int t0 = 0; t0 < count; t0 += fast::kSlices) {
#pragma unroll
      for (int sl = 0; sl < fast::kSlices; sl++) {  // row j0 + t0 + sl is in slice sl
        const int t = t0 + sl;
        if (t < count) {
          const float e = tile[t];
          if (tid == 0) den[sl] = arith::add(den[sl], e);
          if (mine) o[sl] = arith::add(o[sl], arith::mul(e, rows[j0 + t][tid]));
        }
      }
    }
  }
  if (tid == 0) shared_den = arith::add(fast::exp(fast::sub(sinks[h], m)), fast::tree(den));
  __syncthreads();
  if (mine) out[static_cast<int64_t>(h) * d + tid] = fast::div(fast::tree(o), shared_den);
}

// Query t of a row table: its rows are entries first[t] .. first[t + 1] of the address array, of
// which the first n_fixed[t] + extra[t] are visible (extra null: none; extra is what a kernel
// queued before wrote, the indexer's chosen count, so the host never waits for it), never more
// than its entries.
__device__ __forceinline__ int32_t attn_rows_of(const int32_t* first, const int32_t* n_fixed, const int32_t* extra,
                                                int32_t t) {
  const int32_t n = n_fixed[t] + (extra != nullptr ? extra[t] : 0), room = first[t + 1] - first[t];
  return n < room ? n : room;
}

}  // namespace ds4::cuda::stages

// One query. q: n_head x d; rows: n addresses; s: n x n_head. Grid: n * n_head blocks (block
// j * n_head + h is row j, head h); block: stages::kDotThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_attn_scores(const float* q, const float* const* rows, int32_t n_head, int64_t d, float scale, float* s) {
  const int64_t j = blockIdx.x / n_head, h = blockIdx.x % n_head;
  ds4::cuda::stages::attn_score(q, rows[j], h, d, scale, s + j * n_head + h);
}

// One query. s: n x n_head scores from pass 1; sinks: n_head; out: n_head x d. Grid: n_head
// blocks; block: d rounded up to a multiple of 32 threads (at most 1024); dynamic shared memory:
// one float per thread.
extern "C" __global__ void __launch_bounds__(1024)
    ds4_attn_combine(const float* s, const float* const* rows, int32_t n, int32_t n_head, int32_t d, const float* sinks,
                     float* out) {
  ds4::cuda::stages::attn_combine(s, rows, n, n_head, d, static_cast<int>(blockIdx.x), sinks, out);
}

// T queries. q: T x n_head x d; rows: the address array first[] indexes; first: T + 1 entries,
// ascending; s: (first[T] - first[0]) x n_head, query t's from row first[t] - first[0]. Grid:
// (first[T] - first[0]) * n_head blocks, block b being entry first[0] + b / n_head, head
// b % n_head (entries past their query's visible rows return, the whole block); block:
// stages::kDotThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_attn_scores_rows(const float* q, const float* const* rows, const int32_t* first, const int32_t* n_fixed,
                         const int32_t* extra, int32_t T, int32_t n_head, int64_t d, float scale, float* s) {
  const int64_t e = first[0] + static_cast<int64_t>(blockIdx.x / n_head), h = blockIdx.x % n_head;
  int32_t lo = 0, hi = T;  // the query whose entries hold e: first[lo] <= e < first[lo + 1]
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (first[mid] <= e) lo = mid;
    else hi = mid;
  }
  if (e - first[lo] >= ds4::cuda::stages::attn_rows_of(first, n_fixed, extra, lo)) return;
  ds4::cuda::stages::attn_score(q + static_cast<int64_t>(lo) * n_head * d, rows[e], h, d, scale,
                                s + (e - first[0]) * n_head + h);
}

// T queries. s and rows as pass 1 left and read them; out: T x n_head x d. Grid: T * n_head
// blocks (block t * n_head + h); block and dynamic shared memory as ds4_attn_combine.
extern "C" __global__ void __launch_bounds__(1024)
    ds4_attn_combine_rows(const float* s, const float* const* rows, const int32_t* first, const int32_t* n_fixed,
                          const int32_t* extra, int32_t n_head, int32_t d, const float* sinks, float* out) {
  const int32_t t = static_cast<int32_t>(blockIdx.x) / n_head, h = static_cast<int32_t>(blockIdx.x) % n_head;
  const int64_t at = first[t] - first[0];
  ds4::cuda::stages::attn_combine(s + at * n_head, rows + first[t],
                                  ds4::cuda::stages::attn_rows_of(first, n_fixed, extra, t), n_head, d, h, sinks,
                                  out + static_cast<int64_t>(t) * n_head * d);
}
