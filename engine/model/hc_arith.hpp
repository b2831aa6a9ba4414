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

// The steps of the split, each on data no other step of its phase touches, so the device runs
// the lines of a phase on parallel threads with the bits of the serial order below.
// pre[i] = sigmoid(mix[i] * scale[0] + base[i]) + eps.
template <class Math>
DS4_HD float pre_weight(const float* mix, const float* scale, const float* base, float eps, uint32_t i) {
  using quant::arith::add;
  return add(Math::sigmoid(add(quant::arith::mul(mix[i], scale[0]), base[i])), eps);
}

// post[i] = 2 / (1 + exp(-(mix[n + i] * scale[1] + base[n + i]))).
template <class Math>
DS4_HD float post_weight(const float* mix, const float* scale, const float* base, uint32_t n, uint32_t i) {
  using quant::arith::add;
  const float z = add(quant::arith::mul(mix[n + i], scale[1]), base[n + i]);
  return quant::fast::div(2.0f, add(1.0f, Math::exp(-z)));
}

// Source row b of comb (c[a + b*n], a < n): softmax over a of mix * scale[2] + base, then + eps.
template <class Math>
DS4_HD void comb_row(const float* mix, const float* scale, const float* base, uint32_t n, float eps, uint32_t b,
                     float* c) {
  using quant::arith::add;
  using quant::arith::mul;
  float mx = -1.0e30f;
  for (uint32_t a = 0; a < n; a++) {
    const uint32_t idx = a + b * n;
    const float v = add(mul(mix[2 * n + idx], scale[2]), base[2 * n + idx]);
    c[idx] = v;
    if (v > mx) mx = v;
  }
  float sum = 0.0f;
  for (uint32_t a = 0; a < n; a++) {
    const float v = Math::exp(quant::fast::sub(c[a + b * n], mx));
    c[a + b * n] = v;
    sum = add(sum, v);
  }
  const float inv = quant::fast::div(1.0f, sum);
  for (uint32_t a = 0; a < n; a++) c[a + b * n] = add(mul(c[a + b * n], inv), eps);
}

// One Sinkhorn line (elements line[i * step], i < n) divided by (its sum + eps). A column
// phase is lines c + o with step n, a row phase lines c + o * n with step 1, o < n.
DS4_HD void normalise_line(float* line, uint32_t n, uint32_t step, float eps) {
  using quant::arith::add;
  float sum = 0.0f;
  for (uint32_t i = 0; i < n; i++) sum = add(sum, line[i * step]);
  const float inv = quant::fast::div(1.0f, add(sum, eps));
  for (uint32_t i = 0; i < n; i++) line[i * step] = quant::arith::mul(line[i * step], inv);
}

// From the (2 + n) * n mix logits: pre[n], post[n], comb[n * n] (comb[dst + src * n]), in ds4's
// order; Math is the mode's exp and sigmoid. n <= 16 (the caller checks). The column phase,
// then iters - 1 rounds of a row phase and a column phase.
template <class Math>
DS4_HD void split(const float* mix, const float* scale, const float* base, uint32_t n, uint32_t iters, float eps,
                  float* pre, float* post, float* c) {
  for (uint32_t i = 0; i < n; i++) pre[i] = pre_weight<Math>(mix, scale, base, eps, i);
  for (uint32_t i = 0; i < n; i++) post[i] = post_weight<Math>(mix, scale, base, n, i);
  for (uint32_t b = 0; b < n; b++) comb_row<Math>(mix, scale, base, n, eps, b, c);
  for (uint32_t o = 0; o < n; o++) normalise_line(c + o, n, n, eps);
  for (uint32_t it = 1; it < iters; it++) {
    for (uint32_t o = 0; o < n; o++) normalise_line(c + o * n, n, 1, eps);
    for (uint32_t o = 0; o < n; o++) normalise_line(c + o, n, n, eps);
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
