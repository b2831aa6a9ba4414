#pragma once
// Rotary position embedding on the tail n_rot dims of each head (GGML "normal" adjacent-pair
// variant), with DS4's two regimes: plain RoPE (base rope.freq_base) on the raw-window-only
// layers, and YaRN-interpolated RoPE (base compress_rope_freq_base, factor 1/16, ramp between
// the beta_fast/beta_slow correction dims, magnitude scaling cancelled) on compressed layers.
// Exact builds the angle of pair k as ds4 does: theta starts at pos and is multiplied by
// base^(-2/n_rot) once per pair, in f32, then glibc's cosf/sinf. Fast (docs/arithmetic.md §rope):
// theta = pos * freq[k] in binary64 with the per-layer table freq, our own sin/cos, one rounding.
#include <cstdint>
#include <vector>

#include "engine/model/model_config.hpp"

namespace ds4::model {

struct RopeParams {
  uint32_t n_rot = 0;
  float freq_base = 0, freq_scale = 1, ext_factor = 0, attn_factor = 1;
  float corr_dims[2] = {0, 0};
  // Per-layer constants, set by rope_params_for_layer: the magnitude scale (attn_factor times the
  // YaRN factor), ds4's f32 angle ratio base^(-2/n_rot) (Exact) and base^(-2k/n_rot) in binary64
  // (Fast).
  float mscale = 1, theta_scale = 0;
  double freq[256] = {};
};

RopeParams rope_params_for_layer(const ModelConfig& cfg, uint32_t layer);

// cos/sin of every pair at `pos` (already multiplied by the magnitude scale; sin negated when
// inverse), in the Exact or the Fast order. cs has 2 * (n_rot / 2) floats: c0, s0, c1, s1, ...
void rope_angles(const RopeParams& p, uint32_t pos, bool inverse, bool exact, float* cs);

// Rotates the last n_rot dims of each of n_head heads of width head_dim.
void rope_apply(float* x, uint32_t n_head, uint32_t head_dim, uint32_t n_rot, const float* cs);

inline void rope_tail(float* x, uint32_t n_head, uint32_t head_dim, const RopeParams& p, uint32_t pos, bool inverse,
                      bool exact) {
  float cs[512];
  rope_angles(p, pos, inverse, exact, cs);
  rope_apply(x, n_head, head_dim, p.n_rot, cs);
}

}  // namespace ds4::model
