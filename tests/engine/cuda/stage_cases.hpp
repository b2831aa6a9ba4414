#pragma once
// The CPU side the GPU and the emulated stage tests share: attention cases on a layer state shaped
// like the engine's (a raw ring that wraps, compressed rows, an allowed mask) and RoPE cases on a
// plain layer 0 and a YaRN layer 1, each with the CPU function's output the kernels must equal.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "engine/quant/quant.hpp"
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

// One attention case: H heads of width s.d over make_layer(s), and attend_fast's output.
struct AttnCase {
  model::LayerState st;
  std::vector<uint8_t> allowed;
  std::vector<float> q, sinks, want;
};
inline AttnCase make_attn_case(std::mt19937& rng, const AttnShape& s, uint32_t H, kernels::ThreadPool& pool) {
  AttnCase c{make_layer(rng, s), allowed_mask(s), randn(rng, size_t(H) * s.d, 0.6f), randn(rng, H, 1.0f), {}};
  if (H == 3) c.sinks[2] = 30.0f;  // a sink above every score: m is the sink
  c.want.resize(size_t(H) * s.d);
  model::attend_fast(c.st, c.q.data(), H, c.sinks.data(), c.allowed.data(), quant::best_isa(), pool, c.want.data());
  return c;
}

// One RoPE case: T rows of H heads at fixed positions, their cos/sin tables (rope_angles, Fast)
// and the CPU's rotation of x.
struct RopeCase {
  uint32_t head_dim, n_rot, layer, H;
  bool inverse;
  int64_t T;
  std::vector<float> x, cs, want;
};
// Calls check(c) for every width, layer kind, direction and head count the stage tests cover.
template <class F>
void for_each_rope_case(std::mt19937& rng, F&& check) {
  const std::vector<uint32_t> positions = {0, 1, 77, 4096, 65535, 1000000};
  const int64_t T = int64_t(positions.size());
  for (auto [head_dim, n_rot] : {std::pair{512u, 64u}, std::pair{96u, 96u}})
    for (uint32_t layer : {0u, 1u})
      for (bool inverse : {false, true})
        for (uint32_t H : {1u, 3u, 64u}) {
          const model::RopeParams p = model::rope_params_for_layer(rope_config(head_dim, n_rot), layer);
          RopeCase c{head_dim, n_rot, layer, H, inverse, T, randn(rng, size_t(T) * H * head_dim, 1.0f), {}, {}};
          c.want = c.x;
          c.cs.resize(size_t(T) * n_rot);
          for (int64_t t = 0; t < T; t++) {
            model::rope_angles(p, positions[t], inverse, false, c.cs.data() + t * n_rot);
            model::rope_apply(c.want.data() + t * H * head_dim, H, head_dim, n_rot, c.cs.data() + t * n_rot);
          }
          check(c);
        }
}

}  // namespace ds4::cuda::test
