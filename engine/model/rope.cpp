// RoPE / YaRN: Exact as antirez/ds4 computes it (rope_tail_ext_inplace, rope_yarn_*), with the
// constants taken from metadata instead of literals; Fast with binary64 angles. See rope.hpp.
#include "engine/model/rope.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/quant/fast_math.hpp"

namespace ds4::model {
namespace {

constexpr double kPi = 3.14159265358979323846;

float yarn_corr_dim(int n_dims, uint64_t n_ctx_orig, float n_rot, float base) {
  return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * float(kPi))) / (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
  const float y = (float(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

RopeParams rope_params_for_layer(const ModelConfig& cfg, uint32_t layer) {
  RopeParams p;
  p.n_rot = cfg.n_rot;
  const bool compressed = cfg.compress_ratio.at(layer) != 0;
  p.freq_base = compressed && cfg.compress_rope_base > 0.0f ? cfg.compress_rope_base : cfg.rope_base;
  p.freq_scale = (!compressed || cfg.rope_scale_factor <= 0.0f) ? 1.0f : 1.0f / cfg.rope_scale_factor;
  p.ext_factor = compressed && cfg.rope_scale_factor > 1.0f ? 1.0f : 0.0f;
  p.attn_factor = 1.0f;
  if (p.ext_factor != 0.0f && p.freq_scale > 0.0f) {
    // The YaRN helper scales magnitudes by (1 + 0.1 ln(1/s)); DS4 wants none, so the factor is
    // pre-divided and cancels (up to f32 rounding, which the reference also has).
    p.attn_factor /= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  }
  if (p.ext_factor != 0.0f) {
    const int n_dims = int(p.n_rot);
    const uint64_t n_ctx_orig = cfg.rope_orig_ctx;
    const float start = std::floor(yarn_corr_dim(n_dims, n_ctx_orig, cfg.yarn_beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(n_dims, n_ctx_orig, cfg.yarn_beta_slow, p.freq_base));
    p.corr_dims[0] = std::max(0.0f, start);
    p.corr_dims[1] = std::min(float(n_dims - 1), end);
  }
  // Once per layer, not per token (glibc's pow and log; the GPU gets the table, like the angles).
  p.mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) p.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  p.theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
  for (uint32_t k = 0; k < p.n_rot / 2 && k < 256; k++)
    p.freq[k] = std::pow(double(p.freq_base), -2.0 * double(k) / double(p.n_rot));
  return p;
}

namespace {

// docs/arithmetic.md §rope: extrap = pos * freq[k], the YaRN mix in binary64, sin/cos of
// fast_math.hpp rounded once to binary32, then ds4's magnitude scale in binary32.
void rope_angles_fast(const RopeParams& p, uint32_t pos, bool inverse, float* cs) {
  const float sin_sign = inverse ? -1.0f : 1.0f;
  for (uint32_t i = 0; i < p.n_rot; i += 2) {
    const double extrap = double(pos) * p.freq[i / 2];
    double theta = double(p.freq_scale) * extrap;
    if (p.ext_factor != 0.0f) {
      const double ramp_mix = double(yarn_ramp(p.corr_dims[0], p.corr_dims[1], int(i)) * p.ext_factor);
      theta = theta * (1.0 - ramp_mix) + extrap * ramp_mix;
    }
    double s, c;
    quant::fast::sincos(theta, &s, &c);
    cs[i] = float(c) * p.mscale;
    cs[i + 1] = sin_sign * float(s) * p.mscale;
  }
}

}  // namespace

void rope_angles(const RopeParams& p, uint32_t pos, bool inverse, bool exact, float* cs) {
  if (p.n_rot > 512 || (p.n_rot & 1u)) throw std::logic_error("rope: unsupported rotary width");
  if (p.n_rot > 0 && p.freq[0] != 1.0)
    throw std::logic_error("rope: per-layer constants not set (rope_params_for_layer)");
  if (!exact) return rope_angles_fast(p, pos, inverse, cs);
  const float sin_sign = inverse ? -1.0f : 1.0f;
  float theta_extrap = float(pos);
  for (uint32_t i = 0; i < p.n_rot; i += 2) {
    const float theta_interp = p.freq_scale * theta_extrap;
    float theta = theta_interp;
    if (p.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(p.corr_dims[0], p.corr_dims[1], int(i)) * p.ext_factor;
      theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
    }
    cs[i] = std::cos(theta) * p.mscale;
    cs[i + 1] = sin_sign * std::sin(theta) * p.mscale;
    theta_extrap *= p.theta_scale;
  }
}

void rope_apply(float* x, uint32_t n_head, uint32_t head_dim, uint32_t n_rot, const float* cs) {
  const uint32_t n_nope = head_dim - n_rot;
  for (uint32_t h = 0; h < n_head; h++) {
    float* tail = x + uint64_t(h) * head_dim + n_nope;
    for (uint32_t i = 0; i < n_rot; i += 2) {
      const float c = cs[i], s = cs[i + 1];
      const float x0 = tail[i], x1 = tail[i + 1];
      tail[i] = x0 * c - x1 * s;
      tail[i + 1] = x0 * s + x1 * c;
    }
  }
}

}  // namespace ds4::model
