// Scale/min search for the K-quants (Q2_K, Q4_K): fit_scale_min sweeps the grid spacing around
// the one that covers [min, max] and keeps the best least-squares (scale, min) fit. Every function
// takes an optional per-element weight w (W false / null: plain squared error); without weights
// the bytes and the speed are those from before the weights existed. Why and how:
// docs/quant.md §quantizers, §importance-weighted-quantization.
#include "engine/quant/kquant_fit.hpp"

#include <algorithm>
#include <cmath>

#include "engine/quant/blocks.hpp"

namespace ds4::quant::detail {

namespace {

struct ScaleMin {
  float scale, min;
};

// Given a fixed sub-block scale and min, the best integer levels and their squared error.
// W: weighted. The plain instantiation reads every weight as the constant 1, whose products
// fold away: the same code as before weights existed.
template <bool W>
inline float weight_of(const float* w, int i) {
  return W ? w[i] : 1.0f;
}

template <bool W>
float assign_levels(int n, int nmax, const float* x, float scale, float min, uint8_t* L, const float* w) {
  float err = 0.0f;
  for (int i = 0; i < n; i++) {
    int l = scale > 0.0f ? nearest_int((x[i] + min) / scale) : 0;
    l = std::clamp(l, 0, nmax);
    L[i] = static_cast<uint8_t>(l);
    const float diff = scale * static_cast<float>(l) - min - x[i];
    err += weight_of<W>(w, i) * (diff * diff);
  }
  return err;
}

// (Weighted) least-squares scale and offset for fixed levels: x ≈ scale*L + offset, offset <= 0.
// Unweighted, sw sums n ones and is exactly n.
template <bool W>
ScaleMin solve(int n, const float* x, const uint8_t* L, const float* w) {
  double sw = 0, sl = 0, sl2 = 0, sx = 0, slx = 0;
  for (int i = 0; i < n; i++) {
    const double wi = weight_of<W>(w, i);
    sw += wi;
    sl += wi * L[i];
    sl2 += wi * (static_cast<double>(L[i]) * L[i]);
    sx += wi * x[i];
    slx += wi * (static_cast<double>(L[i]) * x[i]);
  }
  const double det = sw * sl2 - sl * sl;
  double scale = 0, offset = 0;
  if (det > 0) {
    scale = (sw * slx - sl * sx) / det;
    offset = (sl2 * sx - sl * slx) / det;
  }
  if (offset > 0) {  // min must be >= 0: refit the scale with offset 0
    offset = 0;
    scale = sl2 > 0 ? slx / sl2 : 0;
  }
  if (scale < 0) scale = 0;
  return {static_cast<float>(scale), static_cast<float>(-offset)};
}

// Fits x[i] ≈ scale * L[i] - min with integer L[i] in [0, nmax], scale >= 0, min >= 0, minimising
// Σ (scale*L - min - x)². Tries a sweep of grid spacings around (max - min)/nmax, solves the
// least-squares scale/offset for each resulting assignment, keeps the best, then polishes by
// alternating re-assignment and re-fit. Writes L and returns {scale, min}.
template <bool W>
ScaleMin fit_scale_min(int n, int nmax, const float* x, uint8_t* L, const float* w) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; i++) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (lo > 0) lo = 0;
  if (hi == lo) {
    for (int i = 0; i < n; i++) L[i] = 0;
    return {0.0f, -lo};
  }
  uint8_t cand[64];
  ScaleMin best{(hi - lo) / nmax, -lo};
  float best_err = assign_levels<W>(n, nmax, x, best.scale, best.min, L, w);
  // Sweep the number of steps spanned by [lo, hi] from nmax-1 to nmax+1.5 and fit each.
  constexpr int kSteps = 24;
  for (int s = 0; s <= kSteps; s++) {
    const float span = static_cast<float>(nmax) - 1.0f + 2.5f * static_cast<float>(s) / kSteps;
    const float iscale = span / (hi - lo);
    for (int i = 0; i < n; i++) cand[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax));
    const ScaleMin sm = solve<W>(n, x, cand, w);
    const float err = assign_levels<W>(n, nmax, x, sm.scale, sm.min, cand, w);
    if (err < best_err) {
      best_err = err;
      best = sm;
      std::copy(cand, cand + n, L);
    }
  }
  for (int it = 0; it < 4; it++) {  // polish: refit for the best levels, reassign
    const ScaleMin sm = solve<W>(n, x, L, w);
    const float err = assign_levels<W>(n, nmax, x, sm.scale, sm.min, cand, w);
    if (!(err < best_err)) break;
    best_err = err;
    best = sm;
    std::copy(cand, cand + n, L);
  }
  return best;
}

// Quantize the sub-block scales (or mins) v[0..n) to integers in [0, qmax] against a shared f16
// super-scale; returns the f16 bits of the super-scale and writes the integers to q. Plain
// (sw null): d = max/qmax. Weighted (sw[i]: the importance of sub-block i): the candidate
// d = t*max/qmax, t in 0.88..1.04, with the least Σ sw_i (v_i - d*q_i)² (a smaller d clips the
// largest scale of an unimportant sub-block to code the important ones more finely).
uint16_t quantize_super_scale(int n, int qmax, const float* v, uint8_t* q, const float* sw) {
  float vmax = 0;
  for (int i = 0; i < n; i++) vmax = std::max(vmax, v[i]);
  auto code = [&](uint16_t d16, uint8_t* out) {
    const float d = f16_to_f32(d16);
    float err = 0;
    for (int i = 0; i < n; i++) {
      out[i] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest_int(v[i] / d), 0, qmax) : 0);
      const float diff = v[i] - d * static_cast<float>(out[i]);
      err += sw[i] * (diff * diff);
    }
    return err;
  };
  uint16_t best = f32_to_f16(vmax / static_cast<float>(qmax));
  if (sw == nullptr) {
    const float d = f16_to_f32(best);
    for (int i = 0; i < n; i++) q[i] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest_int(v[i] / d), 0, qmax) : 0);
    return best;
  }
  float best_err = code(best, q);
  uint8_t cand[16];
  for (const float t : {0.88f, 0.92f, 0.96f, 0.98f, 1.02f, 1.04f}) {
    const uint16_t d16 = f32_to_f16(t * vmax / static_cast<float>(qmax));
    const float err = code(d16, cand);
    if (err < best_err) {
      best_err = err;
      best = d16;
      std::copy(cand, cand + n, q);
    }
  }
  return best;
}

// The last step of fit_super_block: given the f16 super-scales, choose each sub-block's integer
// scale and min (trying the neighbours of the rounded values) and its levels so as to minimise
// the squared error with the values the decoder will actually produce. x: sub-block values (n),
// d/dmin: the decoded super-scales; ls/lm in: rounded integer scale/min, out: the best
// neighbours; L out: levels.
template <bool W>
void refine_sub_block(int n, int nmax, int qmax, const float* x, float d, float dmin, uint8_t& ls, uint8_t& lm,
                      uint8_t* L, const float* w) {
  uint8_t cand[32];
  float best = -1;
  const int ls0 = ls, lm0 = lm;
  for (int a = std::max(0, ls0 - 1); a <= std::min(qmax, ls0 + 1); a++) {
    for (int b = std::max(0, lm0 - 1); b <= std::min(qmax, lm0 + 1); b++) {
      // the decoder computes (d*sc)*q - (dmin*m) in f32
      const float scale = d * static_cast<float>(a);
      const float min = dmin * static_cast<float>(b);
      const float err = assign_levels<W>(n, nmax, x, scale, min, cand, w);
      if (best < 0 || err < best) {
        best = err;
        ls = static_cast<uint8_t>(a);
        lm = static_cast<uint8_t>(b);
        std::copy(cand, cand + n, L);
      }
    }
  }
}

template <bool W>
SuperScales fit_super_block_impl(const float* x, int n_sub, int sub_len, int nmax, int qmax, uint8_t* ls, uint8_t* lm,
                                 uint8_t* L, const float* w) {
  float scales[16], mins[16], sw[16];  // n_sub <= 16 (Q2_K)
  for (int j = 0; j < n_sub; j++) {
    const float* wj = W ? w + sub_len * j : nullptr;
    const ScaleMin sm = fit_scale_min<W>(sub_len, nmax, x + sub_len * j, L + sub_len * j, wj);
    scales[j] = sm.scale;
    mins[j] = sm.min;
    sw[j] = 0;
    if (W)
      for (int i = 0; i < sub_len; i++) sw[j] += wj[i];
  }
  const float* swp = W ? sw : nullptr;
  const SuperScales s{quantize_super_scale(n_sub, qmax, scales, ls, swp),
                      quantize_super_scale(n_sub, qmax, mins, lm, swp)};
  const float d = f16_to_f32(s.d), dmin = f16_to_f32(s.dmin);
  for (int j = 0; j < n_sub; j++)
    refine_sub_block<W>(sub_len, nmax, qmax, x + sub_len * j, d, dmin, ls[j], lm[j], L + sub_len * j,
                        W ? w + sub_len * j : nullptr);
  return s;
}

}  // namespace

SuperScales fit_super_block(const float* x, int n_sub, int sub_len, int nmax, int qmax, uint8_t* ls, uint8_t* lm,
                            uint8_t* L, const float* w) {
  return w ? fit_super_block_impl<true>(x, n_sub, sub_len, nmax, qmax, ls, lm, L, w)
           : fit_super_block_impl<false>(x, n_sub, sub_len, nmax, qmax, ls, lm, L, nullptr);
}

void element_weights(const float* x, const float* importance, int n, float sigma2_factor, float* w) {
  float sumx2 = 0;
  for (int i = 0; i < n; i++) sumx2 += x[i] * x[i];
  const float sigma2 = sigma2_factor * sumx2 / static_cast<float>(n);
  for (int i = 0; i < n; i++) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

}  // namespace ds4::quant::detail
