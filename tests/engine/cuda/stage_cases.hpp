#pragma once
// The CPU side the GPU and the emulated stage tests share: an attention layer state shaped like
// the engine's (a raw ring that wraps, compressed rows, an allowed mask) and the RoPE layer
// configuration (a plain layer 0 and a YaRN layer 1), so both compare the kernels on the same cases.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model/kv_state.hpp"
#include "engine/model/model_config.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace ds4::cuda::test {

struct AttnShape {
  uint32_t d, n_raw, raw_window, n_comp;
  bool sparse;  // every third compressed row not allowed
};

// n_raw rows pushed through a ring of raw_window + 3 slots (so it wraps), n_comp compressed rows.
inline model::LayerState make_layer(std::mt19937& rng, const AttnShape& s) {
  model::LayerState st;
  st.ratio = s.n_comp ? 4 : 0;
  st.head_dim = s.d;
  st.raw_window = s.raw_window;
  st.raw_cap = s.raw_window + 3;
  st.raw.assign(size_t(st.raw_cap) * s.d, 0.0f);
  for (uint32_t r = 0; r < s.n_raw; r++) {
    const auto row = randn(rng, s.d, 0.3f);
    std::memcpy(st.push_raw_slot(), row.data(), s.d * sizeof(float));
  }
  st.comp.init(s.d, s.n_comp + 1);
  for (uint32_t r = 0; r < s.n_comp; r++) {
    const auto row = randn(rng, s.d, 0.3f);
    std::memcpy(st.comp.append(), row.data(), s.d * sizeof(float));
  }
  return st;
}

inline std::vector<uint8_t> allowed_mask(const AttnShape& s) {
  std::vector<uint8_t> allowed(s.n_comp);
  for (uint32_t r = 0; r < s.n_comp; r++) allowed[r] = !s.sparse || r % 3 != 1;
  return allowed;
}

// DS4's RoPE constants with the given widths: layer 0 plain RoPE, layer 1 YaRN.
inline model::ModelConfig rope_config(uint32_t head_dim, uint32_t n_rot) {
  model::ModelConfig c;
  c.head_dim = head_dim;
  c.n_rot = n_rot;
  c.rope_base = 10000;
  c.compress_rope_base = 160000;
  c.rope_scale_factor = 16;
  c.rope_orig_ctx = 65536;
  c.yarn_beta_fast = 32;
  c.yarn_beta_slow = 1;
  c.compress_ratio = {0, 4};
  return c;
}

}  // namespace ds4::cuda::test
