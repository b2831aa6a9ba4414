#pragma once
// The hyper-connection arithmetic (docs/arithmetic.md §hc-sinkhorn) as `__host__ __device__`
// functions: ds4's Sinkhorn split, the weighted sum of the streams, the post mix and the output
// head's stream weight. The CPU (hyper_connection.cpp, output_head.cpp) and the CUDA kernels
// (engine/cuda/kernels/hyper_connection.cuh) both call them, so the device runs the CPU's
// operations; each multiply, add and divide is one rounding (arith::, fast::div).
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

namespace ds4::model::hc {

// The Fast order's transcendentals, usable on the device (numerics.hpp's FastMath is host-only).
struct FastHcMath {
  DS4_HD float exp(float x) { return quant::fast::exp(x); }
  DS4_HD float sigmoid(float z) { return quant::fast::sigmoid(z); }
  DS4_HD float sigmoid_stable(float x) { return quant::fast::sigmoid_stable(x); }
};

// From the (2 + n) * n mix logits: pre[n], post[n], comb[n * n] (comb[dst + src * n]), in ds4's
// order; Math is the mode's exp and sigmoid. n <= 16 (the caller checks).
template <class Math>
DS4_HD void split(const float* mix, const float* scale, const float* base, uint32_t n, uint32_t iters, float eps,
                  float* pre, float* post, float* c) {
  using quant::arith::add;
  using quant::arith::mul;
  using quant::fast::div;
  const float pre_scale = scale[0], post_scale = scale[1], comb_scale = scale[2];
  for (uint32_t i = 0; i < n; i++) pre[i] = add(Math::sigmoid(add(mul(mix[i], pre_scale), base[i])), eps);
  for (uint32_t i = 0; i < n; i++) {
    const float z = add(mul(mix[n + i], post_scale), base[n + i]);
    post[i] = div(2.0f, add(1.0f, Math::exp(-z)));
  }
  // Softmax over the contiguous (destination) index within each source row b: c[a + b*n].
  for (uint32_t b = 0; b < n; b++) {
    float mx = -1.0e30f;
    for (uint32_t a = 0; a < n; a++) {
      const uint32_t idx = a + b * n;
      const float v = add(mul(mix[2 * n + idx], comb_scale), base[2 * n + idx]);
      c[idx] = v;
      if (v > mx) mx = v;
    }
    float sum = 0.0f;
    for (uint32_t a = 0; a < n; a++) {
      const float v = Math::exp(quant::fast::sub(c[a + b * n], mx));
      c[a + b * n] = v;
      sum = add(sum, v);
    }
    const float inv = div(1.0f, sum);
    for (uint32_t a = 0; a < n; a++) c[a + b * n] = add(mul(c[a + b * n], inv), eps);
  }
  // For each line of c (element o * line_stride + i * step, i < n): divide by (its sum + eps).
  auto normalise = [&](uint32_t line_stride, uint32_t step) {
    for (uint32_t o = 0; o < n; o++) {
      float* line = c + o * line_stride;
      float sum = 0.0f;
      for (uint32_t i = 0; i < n; i++) sum = add(sum, line[i * step]);
      const float inv = div(1.0f, add(sum, eps));
      for (uint32_t i = 0; i < n; i++) line[i * step] = mul(line[i * step], inv);
    }
  };
  normalise(1, n);  // for each a: divide by (sum over b + eps)
  for (uint32_t it = 1; it < iters; it++) {
    normalise(n, 1);  // for each b: divide by (sum over a + eps)
    normalise(1, n);
  }
}

// Element d of sum_h H[h] * w[h] (H: n streams of n_embd), accumulated in stream order from +0.
DS4_HD float weighted_sum_at(const float* H, const float* w, uint64_t n_embd, uint32_t n, uint64_t d) {
  float acc = 0.0f;
  for (uint32_t h = 0; h < n; h++) acc = quant::arith::add(acc, quant::arith::mul(H[h * n_embd + d], w[h]));
  return acc;
}

// Element d of stream dst after the post mix: y[d] * post + sum_src comb[dst + src*n] * H[src][d].
DS4_HD float post_at(const float* y, const float* H, float post, const float* comb, uint64_t n_embd, uint32_t n,
                     uint32_t dst, uint64_t d) {
  float acc = quant::arith::mul(y[d], post);
  for (uint32_t src = 0; src < n; src++)
    acc = quant::arith::add(acc, quant::arith::mul(comb[dst + src * n], H[src * n_embd + d]));
  return acc;
}

// The output head's weight of one stream: sigmoid_stable(pre * scale + base) + eps.
template <class Math>
DS4_HD float head_weight(float pre, float scale, float base, float eps) {
  using quant::arith::add;
  return add(Math::sigmoid_stable(add(quant::arith::mul(pre, scale), base)), eps);
}

}  // namespace ds4::model::hc
