// Hyper-connection pre/post arithmetic (see hyper_connection.hpp). The operation order follows
// antirez/ds4's hc_split_sinkhorn_one / hc_post_one exactly: it is part of what makes the
// logits bit-identical to the reference.
#include "engine/model/hyper_connection.hpp"

#include <cmath>
#include <stdexcept>

#include "engine/model/numerics.hpp"

namespace ds4::model {
namespace {

// ds4's order in both modes; Math is the mode's exp (docs/arithmetic.md §hc-sinkhorn).
template <class Math>
void hc_split_as(const float* mix, const float* scale, const float* base, uint32_t n_hc, uint32_t iters, float eps,
                 HcSplit& out) {
  if (n_hc == 0 || n_hc > 16) throw std::logic_error("hc_split: unsupported hyper-connection count");
  const float pre_scale = scale[0], post_scale = scale[1], comb_scale = scale[2];
  const uint32_t n = n_hc;
  for (uint32_t i = 0; i < n; i++) {
    const float z = mix[i] * pre_scale + base[i];
    out.pre[i] = Math::sigmoid(z) + eps;
  }
  for (uint32_t i = 0; i < n; i++) {
    const float z = mix[n + i] * post_scale + base[n + i];
    out.post[i] = 2.0f / (1.0f + Math::exp(-z));
  }
  float* c = out.comb;
  // Softmax over the contiguous (destination) index within each source row b: c[a + b*n].
  for (uint32_t b = 0; b < n; b++) {
    float mx = -1.0e30f;
    for (uint32_t a = 0; a < n; a++) {
      const uint32_t idx = a + b * n;
      const float v = mix[2 * n + idx] * comb_scale + base[2 * n + idx];
      c[idx] = v;
      if (v > mx) mx = v;
    }
    float sum = 0.0f;
    for (uint32_t a = 0; a < n; a++) {
      const float v = Math::exp(c[a + b * n] - mx);
      c[a + b * n] = v;
      sum += v;
    }
    const float inv = 1.0f / sum;
    for (uint32_t a = 0; a < n; a++) c[a + b * n] = c[a + b * n] * inv + eps;
  }
  // For each line of c (element o * line_stride + i * step, i < n): divide by (its sum + eps).
  auto normalise = [&](uint32_t line_stride, uint32_t step) {
    for (uint32_t o = 0; o < n; o++) {
      float* line = c + o * line_stride;
      float sum = 0.0f;
      for (uint32_t i = 0; i < n; i++) sum += line[i * step];
      const float inv = 1.0f / (sum + eps);
      for (uint32_t i = 0; i < n; i++) line[i * step] *= inv;
    }
  };
  normalise(1, n);  // for each a: divide by (sum over b + eps)
  for (uint32_t it = 1; it < iters; it++) {
    normalise(n, 1);  // for each b: divide by (sum over a + eps)
    normalise(1, n);
  }
}

}  // namespace

void hc_split(const float* mix, const float* scale, const float* base, uint32_t n_hc, uint32_t iters, float eps,
              bool exact, HcSplit& out) {
  if (exact) hc_split_as<ExactMath>(mix, scale, base, n_hc, iters, eps, out);
  else hc_split_as<FastMath>(mix, scale, base, n_hc, iters, eps, out);
}

void hc_weighted_sum(const float* H, const float* w, uint32_t n_embd, uint32_t n_hc, float* out) {
  for (uint32_t d = 0; d < n_embd; d++) {
    float acc = 0.0f;
    for (uint32_t h = 0; h < n_hc; h++) acc += H[uint64_t(h) * n_embd + d] * w[h];
    out[d] = acc;
  }
}

void hc_post(const float* y, const float* H, const HcSplit& split, uint32_t n_embd, uint32_t n_hc, float* out_H) {
  for (uint32_t dst = 0; dst < n_hc; dst++) {
    float* o = out_H + uint64_t(dst) * n_embd;
    const float p = split.post[dst];
    for (uint32_t d = 0; d < n_embd; d++) {
      float acc = y[d] * p;
      for (uint32_t src = 0; src < n_hc; src++) acc += split.comb[dst + src * n_hc] * H[uint64_t(src) * n_embd + d];
      o[d] = acc;
    }
  }
}

}  // namespace ds4::model
