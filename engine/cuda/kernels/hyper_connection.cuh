#pragma once
// Hyper-connections on the device (docs/arithmetic.md §hc-sinkhorn), bit-identical to the CPU's
// Fast hc_split + hc_weighted_sum, hc_post (engine/model/hyper_connection.cpp) and the output
// head's stream weights (engine/model/output_head.cpp): every value is computed by the shared
// functions of engine/model/hc_arith.hpp. A row (a token; a token and stream for post) is `parts`
// blocks, each a share of its elements, one thread per element: every element and every split is
// computed from its token's data alone, so neither the batch width nor `parts` changes a bit.
// The Sinkhorn split runs ds4's steps with the n_hc lines of each phase on n_hc threads (its
// latency is the chain of divides); each block of a token computes it, the first writes it.
#include <cstdint>

#include "engine/model/hc_arith.hpp"

// H: T x n_hc x n_embd (token t at t * n_hc * n_embd); mix: T x (2 + n_hc) * n_hc logits;
// scale: 3 floats; base: (2 + n_hc) * n_hc floats. Writes split: T x (2 + n_hc) * n_hc floats
// (pre[n_hc], post[n_hc], comb[n_hc * n_hc], the CPU's HcSplit order) and x: T x n_embd, the
// streams weighted by pre. Grid: T * parts blocks of at least 3 * n_hc threads. n_hc <= 16.
extern "C" __global__ void ds4_hc_pre(const float* H, const float* mix, const float* scale, const float* base,
                                      int32_t n_hc, int32_t iters, float eps, int64_t n_embd, int32_t parts,
                                      float* split, float* x) {
  namespace hc = ds4::model::hc;
  __shared__ float s[(2 + 16) * 16];
  const uint32_t n = static_cast<uint32_t>(n_hc), mixn = (2 + n) * n, i = threadIdx.x;
  const int64_t t = blockIdx.x / parts, part = blockIdx.x % parts;
  const float* m = mix + t * mixn;
  float* c = s + 2 * n;
  // hc::split's phases, line o of each on thread o; the phases meet at barriers.
  if (i < n) s[i] = hc::pre_weight<hc::FastHcMath>(m, scale, base, eps, i);
  else if (i < 2 * n) s[i] = hc::post_weight<hc::FastHcMath>(m, scale, base, n, i - n);
  else if (i < 3 * n) hc::comb_row<hc::FastHcMath>(m, scale, base, n, eps, i - 2 * n, c);
  __syncthreads();
  if (i < n) hc::normalise_line(c + i, n, n, eps);
  __syncthreads();
  for (int32_t it = 1; it < iters; it++) {
    if (i < n) hc::normalise_line(c + i * n, n, 1, eps);
    __syncthreads();
    if (i < n) hc::normalise_line(c + i, n, n, eps);
    __syncthreads();
  }
  if (part == 0)
    for (uint32_t k = i; k < mixn; k += blockDim.x) split[t * mixn + k] = s[k];
  const float* Ht = H + t * n * n_embd;
  for (int64_t d = part * blockDim.x + i; d < n_embd; d += static_cast<int64_t>(parts) * blockDim.x)
    x[t * n_embd + d] = hc::weighted_sum_at(Ht, s, n_embd, n, d);
}

// y: T x n_embd (the sublayer output); H: T x n_hc x n_embd; split as ds4_hc_pre writes it.
// out_H (not H): T x n_hc x n_embd. Grid: T * n_hc * parts blocks; row r = block / parts is
// token r / n_hc, stream r % n_hc.
extern "C" __global__ void ds4_hc_post(const float* y, const float* H, const float* split, int32_t n_hc, int64_t n_embd,
                                       int32_t parts, float* out_H) {
  namespace hc = ds4::model::hc;
  const uint32_t n = static_cast<uint32_t>(n_hc);
  const int64_t r = blockIdx.x / parts, part = blockIdx.x % parts, t = r / n;
  const uint32_t dst = static_cast<uint32_t>(r % n);
  const float* sp = split + t * (2 + n) * n;
  const float post = sp[n + dst];
  const float *yt = y + t * n_embd, *Ht = H + t * n * n_embd;
  float* o = out_H + r * n_embd;
  for (int64_t d = part * blockDim.x + threadIdx.x; d < n_embd; d += static_cast<int64_t>(parts) * blockDim.x)
    o[d] = hc::post_at(yt, Ht, post, sp + 2 * n, n_embd, n, dst, d);
}

// The output head's collapse: pre: T x n_hc (the hc_fn projection of the normed streams);
// scale: 1 float; base: n_hc floats; H: T x n_hc x n_embd. y: T x n_embd, the streams weighted
// by sigmoid_stable(pre * scale + base) + eps. Grid: T * parts blocks of at least n_hc threads.
extern "C" __global__ void ds4_hc_head(const float* pre, const float* scale, const float* base, const float* H,
                                       int32_t n_hc, float eps, int64_t n_embd, int32_t parts, float* y) {
  namespace hc = ds4::model::hc;
  __shared__ float w[16];
  const uint32_t n = static_cast<uint32_t>(n_hc);
  const int64_t t = blockIdx.x / parts, part = blockIdx.x % parts;
  if (threadIdx.x < n)
    w[threadIdx.x] = hc::head_weight<hc::FastHcMath>(pre[t * n + threadIdx.x], scale[0], base[threadIdx.x], eps);
  __syncthreads();
  const float* Ht = H + t * n * n_embd;
  for (int64_t d = part * blockDim.x + threadIdx.x; d < n_embd; d += static_cast<int64_t>(parts) * blockDim.x)
    y[t * n_embd + d] = hc::weighted_sum_at(Ht, w, n_embd, n, d);
}
