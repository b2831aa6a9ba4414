#pragma once
// The CPU side the GPU and the emulated tests of the residual-stream kernels share: random HC
// cases (streams, mix logits with a few extreme ones, weights, a sublayer output, the head's
// projection) with the CPU Fast functions' results, the embedding's reference (embed_rows' loop
// over the f16 table), and activation rows for the quantizers (ties, zero blocks, equal |x|).
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/model/hyper_connection.hpp"
#include "engine/model/numerics.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace ds4::cuda::test {

struct HcCase {
  int64_t T = 0;
  uint32_t n_hc = 0, n_embd = 0, iters = 20;
  float eps = 1e-6f;
  std::vector<float> H, mix, scale, base, y, head_pre, head_scale, head_base;
  // The CPU's results: split (pre, post, comb per token, compact), x, the post mix, the head's y.
  std::vector<float> split, x, post_H, head_y;
  uint32_t mixn() const { return (2 + n_hc) * n_hc; }
};

inline HcCase make_hc_case(std::mt19937& rng, int64_t T, uint32_t n_hc, uint32_t n_embd) {
  HcCase c;
  c.T = T;
  c.n_hc = n_hc;
  c.n_embd = n_embd;
  const uint32_t mixn = c.mixn(), D = n_embd, hc = n_hc * n_embd;
  c.H = randn(rng, size_t(T) * hc, 1.0f);
  c.mix = randn(rng, size_t(T) * mixn, 1.0f);
  for (size_t i = 7; i < c.mix.size(); i += 29) c.mix[i] *= 200.0f;  // exp's overflow and underflow
  c.scale = {0.3f, 0.7f, 1.9f};
  c.base = randn(rng, mixn, 0.5f);
  c.y = randn(rng, size_t(T) * D, 1.0f);
  c.head_pre = randn(rng, size_t(T) * n_hc, 2.0f);
  c.head_scale = {0.8f};
  c.head_base = randn(rng, n_hc, 0.5f);
  if (!c.head_pre.empty()) c.head_pre[0] = 90.0f;  // sigmoid_stable's far branches
  if (c.head_pre.size() > 1) c.head_pre[1] = -90.0f;
  c.split.resize(size_t(T) * mixn);
  c.x.resize(size_t(T) * D);
  c.post_H.resize(size_t(T) * hc);
  c.head_y.resize(size_t(T) * D);
  for (int64_t t = 0; t < T; t++) {
    model::HcSplit s;
    model::hc_split(c.mix.data() + t * mixn, c.scale.data(), c.base.data(), n_hc, c.iters, c.eps, false, s);
    float* sp = c.split.data() + t * mixn;
    std::memcpy(sp, s.pre, n_hc * sizeof(float));
    std::memcpy(sp + n_hc, s.post, n_hc * sizeof(float));
    std::memcpy(sp + 2 * n_hc, s.comb, n_hc * n_hc * sizeof(float));
    const float* Ht = c.H.data() + t * hc;
    model::hc_weighted_sum(Ht, s.pre, D, n_hc, c.x.data() + t * D);
    model::hc_post(c.y.data() + t * D, Ht, s, D, n_hc, c.post_H.data() + t * hc);
    float wt[16];  // output_head.cpp's expression in the Fast mode, written out
    for (uint32_t i = 0; i < n_hc; i++)
      wt[i] = model::FastMath::sigmoid_stable(c.head_pre[t * n_hc + i] * c.head_scale[0] + c.head_base[i]) + c.eps;
    model::hc_weighted_sum(Ht, wt, D, n_hc, c.head_y.data() + t * D);
  }
  return c;
}

// An f16 table of random bits (every class of half: subnormals, infinities, NaNs).
inline std::vector<uint16_t> random_halves(std::mt19937& rng, size_t n) {
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = uint16_t(rng());
  return v;
}

// embed_rows (engine/model/forward.cpp) for valid ids: the f16 row in every stream.
inline std::vector<float> embed_reference(const std::vector<uint16_t>& table, const std::vector<int32_t>& ids,
                                          uint32_t n_embd, uint32_t n_hc) {
  std::vector<float> H(ids.size() * n_hc * n_embd);
  for (size_t t = 0; t < ids.size(); t++) {
    float* h0 = H.data() + t * n_hc * n_embd;
    for (uint32_t i = 0; i < n_embd; i++) h0[i] = model::f16_to_f32(table[size_t(ids[t]) * n_embd + i]);
    for (uint32_t h = 1; h < n_hc; h++) std::memcpy(h0 + size_t(h) * n_embd, h0, n_embd * sizeof(float));
  }
  return H;
}

// rows x n activations (n a multiple of 32): normal rows at several scales, then per whole 256
// floats of the array one special pattern by their index: an all-zero block, exact halves (max 127: ties to even),
// equal |x| of both signs (the first one sets Q8_K's sign), -0 and tiny values, a NaN and an inf.
inline std::vector<float> activation_rows(std::mt19937& rng, int64_t rows, int64_t n) {
  std::vector<float> x(size_t(rows * n));
  for (int64_t r = 0; r < rows; r++) {
    const auto v = randn(rng, size_t(n), r % 3 == 0 ? 1.0f : (r % 3 == 1 ? 30.0f : 1e-3f));
    std::memcpy(x.data() + r * n, v.data(), size_t(n) * sizeof(float));
  }
  const int64_t blocks = rows * n / 256;
  for (int64_t b = 0; b < blocks; b++) {
    float* xb = x.data() + b * 256;
    switch (b % 6) {
      case 1:
        for (int j = 0; j < 256; j++) xb[j] = 0.0f;
        break;
      case 2:
        for (int j = 0; j < 256; j++) xb[j] = float(j % 255 - 127) + 0.5f;    // |x| <= 126.5
        for (int j = 0; j < 256; j += 32) xb[j] = j % 64 ? 127.0f : -127.0f;  // each Q8_0 block's max
        break;
      case 3:
        xb[40] = -1000.0f;
        xb[41] = 1000.0f;
        xb[200] = 1000.0f;
        break;
      case 4:
        for (int j = 0; j < 256; j++) xb[j] = j % 2 ? -0.0f : 1e-20f * float(j % 7);
        break;
      case 5:  // NaN and inf round to 0 on every CPU and on the device
        xb[3] = std::numeric_limits<float>::quiet_NaN();
        xb[100] = -std::numeric_limits<float>::infinity();
        break;
      default: break;
    }
  }
  return x;
}

}  // namespace ds4::cuda::test
