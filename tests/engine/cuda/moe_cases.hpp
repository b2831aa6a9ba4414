#pragma once
// The CPU side the GPU and the emulated MoE tests share: a tiny random FFN layer (router, bias or
// hash table, routed experts of one format, Q8_0 shared expert) bound into model::LayerWeights as
// the loader binds a GGUF's, with moe_forward's Fast output for T tokens, and grouped-output
// cases with model::grouped_output's. Weight bytes come from ds4-cuda-check's generator
// (tools/cuda_check/matvec_compare.hpp), so every block has finite scales.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/moe.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/weights.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace ds4::cuda::test {

struct MoeShape {
  quant::Type expert_type;
  uint32_t n_embd, n_ff, n_expert, n_used;
  bool hash;  // tid2eid routing (no bias) instead of the biased top-k
  bool ties;  // router logits on a coarse grid, so equal scores compete for the last slots
};

struct MoeCase {
  MoeShape shape;
  model::ModelConfig cfg;
  model::LayerWeights lw;
  float clamp = 0.0f;
  int T = 0, n_vocab = 0;
  std::vector<uint8_t> gate_inp, gate_exps, up_exps, down_exps, gate_sh, up_sh, down_sh;
  std::vector<float> bias, xn;
  std::vector<int32_t> tid2eid, tokens;
  std::vector<float> want;                  // moe_forward's ffn_out [T][n_embd]
  std::vector<model::RoutedChoice> choice;  // its routing
  std::vector<float> logits;                // its router logits [T][n_expert]
};

inline model::Tensor bind(const std::string& name, quant::Type type, std::vector<uint64_t> ne, const void* data,
                          size_t bytes) {
  model::Tensor t;
  t.name = name;
  t.type = type;
  t.ndim = uint32_t(ne.size());
  for (size_t i = 0; i < ne.size(); i++) t.ne[i] = ne[i];
  t.data = static_cast<const uint8_t*>(data);
  t.bytes = bytes;
  return t;
}

// Q8_0 and F16 through the quantizer; the routed formats as random bytes with sane scales (the
// IQ2_XXS quantizer is too slow for thousands of rows in a unit test), every block valid.
inline std::vector<uint8_t> weight_bytes(quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  using quant::Type;
  if (type == Type::Q8_0 || type == Type::F16) return cuda_check::matvec_inputs(type, rows, cols, false, seed).w;
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(quant::row_bytes(type, uint64_t(cols)) * size_t(rows));
  for (auto& b : w) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(0.005f, 0.02f);
  auto f16 = [&] { return model::f32_to_f16(scale(rng)); };
  auto fix = [&](auto* blocks, auto&& set) {
    for (size_t i = 0; i < w.size() / sizeof(*blocks); i++) set(blocks[i]);
  };
  if (type == Type::Q2_K)
    fix(reinterpret_cast<quant::detail::BlockQ2_K*>(w.data()), [&](auto& b) { b.d = f16(), b.dmin = f16(); });
  if (type == Type::Q4_K)
    fix(reinterpret_cast<quant::detail::BlockQ4_K*>(w.data()), [&](auto& b) { b.d = f16(), b.dmin = f16(); });
  if (type == Type::IQ2_XXS)
    fix(reinterpret_cast<quant::detail::BlockIQ2_XXS*>(w.data()), [&](auto& b) { b.d = f16(); });
  if (type == Type::MXFP4)
    fix(reinterpret_cast<quant::detail::BlockMXFP4*>(w.data()), [&](auto& b) { b.e = uint8_t(119 + rng() % 6); });
  return w;
}

// The case (shape s, T tokens) and moe_forward's output in the Fast order.
inline void make_moe_case(std::mt19937& rng, const MoeShape& s, int T, ds4::kernels::ThreadPool& pool, MoeCase& c) {
  using quant::Type;
  const uint32_t D = s.n_embd, F = s.n_ff, E = s.n_expert, K = s.n_used;
  c.shape = s;
  c.T = T;
  c.n_vocab = 50;
  c.clamp = 0.75f;  // clamps some of the gates and ups of these weights
  c.cfg.n_embd = D;
  c.cfg.n_ff = F;
  c.cfg.n_expert = E;
  c.cfg.n_expert_used = K;
  c.cfg.expert_weight_scale = 1.5f;
  const uint32_t seed = rng();
  c.gate_inp = weight_bytes(Type::F16, E, D, seed);
  c.gate_exps = weight_bytes(s.expert_type, int64_t(E) * F, D, seed + 1);
  c.up_exps = weight_bytes(s.expert_type, int64_t(E) * F, D, seed + 2);
  c.down_exps = weight_bytes(s.expert_type, int64_t(E) * D, F, seed + 3);
  c.gate_sh = weight_bytes(Type::Q8_0, F, D, seed + 4);
  c.up_sh = weight_bytes(Type::Q8_0, F, D, seed + 5);
  c.down_sh = weight_bytes(Type::Q8_0, D, F, seed + 6);
  c.xn = randn(rng, size_t(T) * D, 1.0f);
  if (s.ties) {  // gate_inp . xn on a grid of 1/4: many equal logits, hence equal scores
    std::vector<uint16_t> h(size_t(E) * D, 0);
    std::uniform_int_distribution<int> pick(0, 3);
    for (auto& v : h) v = pick(rng) == 0 ? 0x3400 : 0;  // 0.25 or 0
    c.gate_inp.assign(reinterpret_cast<const uint8_t*>(h.data()),
                      reinterpret_cast<const uint8_t*>(h.data() + h.size()));
    for (auto& x : c.xn) x = float(int(x * 2.0f));  // small integers
  }
  model::LayerWeights& lw = c.lw;
  lw.ffn_gate_inp = bind("ffn_gate_inp", Type::F16, {D, E}, c.gate_inp.data(), c.gate_inp.size());
  if (s.hash) {
    std::uniform_int_distribution<int32_t> e(0, int32_t(E) - 1), tok(0, c.n_vocab - 1);
    c.tid2eid.resize(size_t(c.n_vocab) * K);
    for (auto& v : c.tid2eid) v = e(rng);
    lw.ffn_gate_tid2eid = bind("tid2eid", Type::I32, {K, uint64_t(c.n_vocab)}, c.tid2eid.data(), c.tid2eid.size() * 4);
    for (int t = 0; t < T; t++) c.tokens.push_back(tok(rng));
  } else {
    c.bias = s.ties ? std::vector<float>(E, 0.0f) : randn(rng, E, 0.05f);
    lw.exp_probs_b = bind("exp_probs_b", Type::F32, {E}, c.bias.data(), c.bias.size() * 4);
    c.tokens.assign(size_t(T), 0);
  }
  lw.ffn_gate_exps = bind("gate_exps", s.expert_type, {D, F, E}, c.gate_exps.data(), c.gate_exps.size());
  lw.ffn_up_exps = bind("up_exps", s.expert_type, {D, F, E}, c.up_exps.data(), c.up_exps.size());
  lw.ffn_down_exps = bind("down_exps", s.expert_type, {F, D, E}, c.down_exps.data(), c.down_exps.size());
  lw.ffn_gate_shexp = bind("gate_shexp", Type::Q8_0, {D, F}, c.gate_sh.data(), c.gate_sh.size());
  lw.ffn_up_shexp = bind("up_shexp", Type::Q8_0, {D, F}, c.up_sh.data(), c.up_sh.size());
  lw.ffn_down_shexp = bind("down_shexp", Type::Q8_0, {F, D}, c.down_sh.data(), c.down_sh.size());

  model::Exec ex;
  ex.pool = &pool;
  ex.exact = false;
  ex.isa = quant::best_isa();
  model::MoeScratch scratch;
  c.want.assign(size_t(T) * D, 0.0f);
  model::moe_forward(ex, c.cfg, lw, s.hash, c.clamp, c.xn.data(), c.tokens.data(), T, c.want.data(), scratch);
  c.choice = scratch.choice;
  c.logits = scratch.logits;
}

// Grouped output: n_group groups of `rank` rows over group_dim = heads_per_group * head_dim.
struct GroupedCase {
  model::ModelConfig cfg;
  model::Tensor output_a;
  std::vector<uint8_t> w;
  model::QuantAct qa;       // the heads quantized as the CPU quantizes them
  std::vector<float> want;  // low [T][n_group][rank]
};

inline void make_grouped_case(std::mt19937& rng, uint32_t n_head, uint32_t head_dim, uint32_t n_group, uint32_t rank,
                              int T, ds4::kernels::ThreadPool& pool, GroupedCase& c) {
  c.cfg.n_head = n_head;
  c.cfg.head_dim = head_dim;
  c.cfg.n_out_group = n_group;
  c.cfg.out_lora_rank = rank;
  const uint32_t gd = c.cfg.group_dim();
  c.w = weight_bytes(quant::Type::Q8_0, int64_t(n_group) * rank, gd, rng());
  c.output_a = bind("attn_output_a", quant::Type::Q8_0, {gd, uint64_t(n_group) * rank}, c.w.data(), c.w.size());
  const auto heads = randn(rng, size_t(T) * c.cfg.q_dim(), 1.0f);
  model::Exec ex;
  ex.pool = &pool;
  ex.exact = false;
  ex.isa = quant::best_isa();
  c.want.assign(size_t(T) * n_group * rank, 0.0f);
  std::vector<float> tmp;
  model::grouped_output(ex, c.cfg, c.output_a, heads.data(), T, c.want.data(), c.qa, tmp);
  model::quantize_rows(quant::Type::Q8_0, heads.data(), T, int64_t(c.cfg.q_dim()), c.qa);
}

}  // namespace ds4::cuda::test
