#pragma once
// Sink attention of one query token in the Fast order (docs/arithmetic.md §attention),
// bit-identical to the CPU's engine/model/attention_fast.cpp. The visible rows come as a device
// array of n row addresses (raw window oldest first, then the allowed compressed rows), each row
// d floats and both key and value, so the raw ring and the compressed store need no gathering.
// Pass 1 (ds4_attn_scores): one 8-warp block per (row, head) takes the Fast float dot
// (float_dot_block.cuh), s[j * n_head + h] = fl(dot * scale). Pass 2 (ds4_attn_combine): one
// block per head, thread i owns output element i and keeps its eight slice accumulators in
// registers; the block computes the weights e[j] = exp(s[j] - m) a tile at a time into shared
// memory, then every thread adds row j into slice j mod 8 (a multiply, then an add: no FMA).
#include <cstdint>

#include "engine/cuda/kernels/dynamic_shared.cuh"
#include "engine/cuda/kernels/float_dot_block.cuh"
#include "engine/quant/fast_math.hpp"

// Both passes see n = n_fixed + *extra rows (extra null: n_fixed), so a count another kernel wrote
// (the indexer's chosen rows) is read here and the host never waits for it.
__device__ inline int32_t ds4_attn_rows(int32_t n_fixed, const int32_t* extra) {
  return extra != nullptr ? n_fixed + *extra : n_fixed;
}

// q: n_head x d; rows: n addresses; s: n x n_head. Grid: at least n * n_head blocks (block
// j * n_head + h is row j, head h; blocks past the n rows return); block: stages::kDotThreads.
extern "C" __global__ void __launch_bounds__(ds4::cuda::stages::kDotThreads)
    ds4_attn_scores(const float* q, const float* const* rows, int32_t n_head, int64_t d, float scale, float* s,
                    int32_t n_fixed, const int32_t* extra) {
  namespace st = ds4::cuda::stages;
  __shared__ float slices[ds4::quant::fast::kSlices];
  const int64_t j = blockIdx.x / n_head, h = blockIdx.x % n_head;
  if (j >= ds4_attn_rows(n_fixed, extra)) return;  // the whole block: no barrier is split
  const float dot = st::block_fast_dot(rows[j], q + h * d, d, slices);
  if (threadIdx.x == 0) s[j * n_head + h] = st::arith::mul(dot, scale);
}

// s: n x n_head scores from pass 1; sinks: n_head; out: n_head x d. Grid: n_head blocks; block:
// d rounded up to a multiple of 32 threads (at most 1024); dynamic shared memory: one float per
// thread (the tile of weights, and the scratch of the maximum).
extern "C" __global__ void __launch_bounds__(1024)
    ds4_attn_combine(const float* s, const float* const* rows, int32_t n_fixed, const int32_t* extra, int32_t n_head,
                     int32_t d, const float* sinks, float* out) {
  namespace fast = ds4::quant::fast;
  const int32_t n = ds4_attn_rows(n_fixed, extra);
  namespace arith = ds4::quant::arith;
  DS4_DYNAMIC_SHARED(float, tile);
  __shared__ float shared_m, shared_den;
  const int h = static_cast<int>(blockIdx.x), tid = static_cast<int>(threadIdx.x);
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
