#pragma once
// Hyper-connections on the device (docs/arithmetic.md §hc-sinkhorn), bit-identical to the CPU's
// Fast hc_split + hc_weighted_sum, hc_post (engine/model/hyper_connection.cpp) and the output
// head's stream weights (engine/model/output_head.cpp): every value is computed by the shared
// functions of engine/model/hc_arith.hpp. One CUDA block per token (per token and stream for
// post), so a batch of any width gives each token the bits it gets alone. The Sinkhorn split is
// ds4's serial order on one thread (a 4x4 matrix: microseconds); the sums over the n_hc streams
// are per element, one thread per element.
#include <cstdint>

#include "engine/model/hc_arith.hpp"

// H: T x n_hc x n_embd (token t at t * n_hc * n_embd); mix: T x (2 + n_hc) * n_hc logits;
// scale: 3 floats; base: (2 + n_hc) * n_hc floats. Writes split: T x (2 + n_hc) * n_hc floats
// (pre[n_hc], post[n_hc], comb[n_hc * n_hc], the CPU's HcSplit order) and x: T x n_embd, the
// streams weighted by pre. Grid: T blocks. n_hc <= 16.
extern "C" __global__ void ds4_hc_pre(const float* H, const float* mix, const float* scale, const float* base,
                                      int32_t n_hc, int32_t iters, float eps, int64_t n_embd, float* split, float* x) {
  namespace hc = ds4::model::hc;
  __shared__ float s[(2 + 16) * 16];
  const uint32_t n = static_cast<uint32_t>(n_hc), mixn = (2 + n) * n;
  const int64_t t = blockIdx.x;
  if (threadIdx.x == 0) hc::split<hc::FastHcMath>(mix + t * mixn, scale, base, n, iters, eps, s, s + n, s + 2 * n);
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < mixn; i += blockDim.x) split[t * mixn + i] = s[i];
  const float* Ht = H + t * n * n_embd;
  for (int64_t d = threadIdx.x; d < n_embd; d += blockDim.x)
    x[t * n_embd + d] = hc::weighted_sum_at(Ht, s, n_embd, n, d);
}

// y: T x n_embd (the sublayer output); H: T x n_hc x n_embd; split as ds4_hc_pre writes it.
// out_H (not H): T x n_hc x n_embd. Grid: T * n_hc blocks, block r is token r / n_hc, stream
// r % n_hc.
extern "C" __global__ void ds4_hc_post(const float* y, const float* H, const float* split, int32_t n_hc, int64_t n_embd,
                                       float* out_H) {
  namespace hc = ds4::model::hc;
  const uint32_t n = static_cast<uint32_t>(n_hc), dst = blockIdx.x % n;
  const int64_t t = blockIdx.x / n;
  const float* sp = split + t * (2 + n) * n;
  const float post = sp[n + dst];
  const float *yt = y + t * n_embd, *Ht = H + t * n * n_embd;
  float* o = out_H + (t * n + dst) * n_embd;
  for (int64_t d = threadIdx.x; d < n_embd; d += blockDim.x)
    o[d] = hc::post_at(yt, Ht, post, sp + 2 * n, n_embd, n, dst, d);
}

// The output head's collapse: pre: T x n_hc (the hc_fn projection of the normed streams);
// scale: 1 float; base: n_hc floats; H: T x n_hc x n_embd. y: T x n_embd, the streams weighted
// by sigmoid_stable(pre * scale + base) + eps. Grid: T blocks. n_hc <= 16.
extern "C" __global__ void ds4_hc_head(const float* pre, const float* scale, const float* base, const float* H,
                                       int32_t n_hc, float eps, int64_t n_embd, float* y) {
  namespace hc = ds4::model::hc;
  __shared__ float w[16];
  const uint32_t n = static_cast<uint32_t>(n_hc);
  const int64_t t = blockIdx.x;
  if (threadIdx.x < n)
    w[threadIdx.x] = hc::head_weight<hc::FastHcMath>(pre[t * n + threadIdx.x], scale[0], base[threadIdx.x], eps);
  __syncthreads();
  const float* Ht = H + t * n * n_embd;
  for (int64_t d = threadIdx.x; d < n_embd; d += blockDim.x)
    y[t * n_embd + d] = hc::weighted_sum_at(Ht, w, n_embd, n, d);
}
