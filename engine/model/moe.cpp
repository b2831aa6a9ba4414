// Mixture-of-experts FFN; see moe.hpp. Work is grouped by expert so that each selected
// expert's weights are streamed once per batch; every output element is still one dot product
// of one weight row with one activation row, so a token's result does not depend on the batch
// it was computed in. The per-token sum over experts runs in slot order from 0.0f, as ds4's
// matvec_q2_k_accum_worker does. The Fast order's router and SwiGLU arithmetic and the top-k are
// moe_arith.hpp's, which the CUDA kernels run too.
#include "engine/model/moe.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/moe_arith.hpp"
#include "engine/model/numerics.hpp"

namespace ds4::model {

void router_probs(const float* logits, uint32_t n_expert, bool exact, float* probs) {
  if (exact)
    for (uint32_t i = 0; i < n_expert; i++) probs[i] = std::sqrt(ExactMath::softplus(logits[i]));
  else
    for (uint32_t i = 0; i < n_expert; i++) probs[i] = moe_arith::router_prob(logits[i]);
}

namespace {

// out = the rows src.row(pairs[i] / pairs_per_row) for i < pairs.size(): the activation rows of
// one expert's (token, slot) pairs, contiguous so the expert's matmul reads them as one batch.
void gather_rows(const QuantAct& src, const std::vector<uint32_t>& pairs, uint32_t pairs_per_row, QuantAct& out) {
  const int n = int(pairs.size());
  out.type = src.type;
  out.cols = src.cols;
  out.row_bytes = src.row_bytes;
  out.rows = n;
  if (out.bytes.size() < src.row_bytes * n) out.bytes.resize(src.row_bytes * n);
  for (int i = 0; i < n; i++)
    std::memcpy(out.bytes.data() + size_t(i) * src.row_bytes, src.row(int(pairs[i] / pairs_per_row)), src.row_bytes);
}

}  // namespace

void route_token(const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, int32_t token, const float* probs,
                 RoutedChoice& out) {
  const uint32_t k = cfg.n_expert_used;
  if (hash_layer) {
    if (token < 0 || uint64_t(token) >= lw.ffn_gate_tid2eid.ne[1])
      throw std::out_of_range("token id " + std::to_string(token) + " is outside " + lw.ffn_gate_tid2eid.name);
    const int32_t* row = lw.ffn_gate_tid2eid.i32() + uint64_t(token) * k;
    for (uint32_t i = 0; i < k; i++) {
      if (row[i] < 0 || uint32_t(row[i]) >= cfg.n_expert)
        throw std::runtime_error(lw.ffn_gate_tid2eid.name + ": expert id " + std::to_string(row[i]) +
                                 " out of range for token " + std::to_string(token));
      out.expert[i] = row[i];
    }
  } else {
    float sel[1024];
    const float* score = probs;
    if (lw.exp_probs_b.present()) {
      const float* b = lw.exp_probs_b.f32();
      for (uint32_t i = 0; i < cfg.n_expert; i++) sel[i] = probs[i] + b[i];
      score = sel;
    }
    moe_arith::topk_desc(score, cfg.n_expert, k, out.expert);
  }
  moe_arith::normalise_weights(out.expert, k, probs, cfg.expert_weight_scale, out.weight);
}

void moe_forward(const Exec& ex, const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, float clamp,
                 const float* xn, const int32_t* tokens, int T, float* ffn_out, MoeScratch& s) {
  const uint32_t E = cfg.n_expert, K = cfg.n_expert_used, F = cfg.n_ff, D = cfg.n_embd;

  // Router.
  s.logits.resize(size_t(T) * E);
  s.probs.resize(size_t(T) * E);
  project(ex, lw.ffn_gate_inp, xn, T, s.logits.data(), s.xq);
  s.choice.resize(T);
  for (int t = 0; t < T; t++) {
    router_probs(s.logits.data() + size_t(t) * E, E, ex.exact, s.probs.data() + size_t(t) * E);
    route_token(cfg, lw, hash_layer, tokens[t], s.probs.data() + size_t(t) * E, s.choice[t]);
  }
  s.pairs_of_expert.resize(E);
  for (auto& v : s.pairs_of_expert) v.clear();
  for (int t = 0; t < T; t++)
    for (uint32_t k = 0; k < K; k++) s.pairs_of_expert[s.choice[t].expert[k]].push_back(uint32_t(t) * K + k);

  // Gate/up for every (token, slot) pair, grouped by expert; mid = silu(g) * u * weight, taken
  // while the expert's rows are hot.
  quantize_rows(ex, lw.ffn_gate_exps.type, xn, T, D, s.xq);
  s.mid.resize(size_t(T) * K * F);
  for (uint32_t e = 0; e < E; e++) {
    const auto& pairs = s.pairs_of_expert[e];
    if (pairs.empty()) continue;
    const int n = int(pairs.size());
    gather_rows(s.xq, pairs, K, s.gather);  // one token row per pair
    if (ex.observer)
      for (uint32_t pair : pairs) {
        ex.observer->observe(lw.ffn_gate_exps.name, int(e), xn + size_t(pair / K) * D, D);
        ex.observer->observe(lw.ffn_up_exps.name, int(e), xn + size_t(pair / K) * D, D);
      }
    s.gate.resize(size_t(n) * F);
    s.up.resize(size_t(n) * F);
    matmul(ex, lw.ffn_gate_exps.expert(e), s.gather, s.gate.data());
    matmul(ex, lw.ffn_up_exps.expert(e), s.gather, s.up.data());
    for_rows(ex, n, 3.0 * F * sizeof(float), [&](int i) {
      const uint32_t pair = pairs[i];
      const float w = s.choice[pair / K].weight[pair % K];
      float* mid = s.mid.data() + size_t(pair) * F;
      const float* g = s.gate.data() + size_t(i) * F;
      const float* u = s.up.data() + size_t(i) * F;
      if (ex.exact)
        for (uint32_t j = 0; j < F; j++) mid[j] = swiglu_clamped<ExactMath>(g[j], u[j], clamp) * w;
      else
        for (uint32_t j = 0; j < F; j++) mid[j] = moe_arith::routed_mid(g[j], u[j], clamp, w);
    });
  }

  // Down projections of the re-quantized hidden vectors, written in expert order (each expert's
  // rows are one batch of its matmul): pair q's row is at[q].
  quantize_rows(ex, lw.ffn_down_exps.type, s.mid.data(), T * int(K), F, s.midq);
  s.down.resize(size_t(T) * K * D);
  s.at.resize(size_t(T) * K);
  uint32_t row = 0;
  for (uint32_t e = 0; e < E; e++) {
    const auto& pairs = s.pairs_of_expert[e];
    if (pairs.empty()) continue;
    gather_rows(s.midq, pairs, 1, s.gather);  // one hidden row per pair
    if (ex.observer)
      for (uint32_t pair : pairs)
        ex.observer->observe(lw.ffn_down_exps.name, int(e), s.mid.data() + size_t(pair) * F, F);
    matmul(ex, lw.ffn_down_exps.expert(e), s.gather, s.down.data() + size_t(row) * D);
    for (uint32_t pair : pairs) s.at[pair] = row++;
  }

  // Shared expert (weight 1).
  const uint32_t Fs = uint32_t(lw.ffn_gate_shexp.ne[1]);
  s.sh_gate.resize(size_t(T) * Fs);
  s.sh_up.resize(size_t(T) * Fs);
  s.sh_mid.resize(size_t(T) * Fs);
  s.sh_out.resize(size_t(T) * D);
  quantize_rows(ex, lw.ffn_gate_shexp.type, xn, T, D, s.shq);
  if (ex.observer)
    for (int t = 0; t < T; t++) {
      ex.observer->observe(lw.ffn_gate_shexp.name, -1, xn + size_t(t) * D, D);
      ex.observer->observe(lw.ffn_up_shexp.name, -1, xn + size_t(t) * D, D);
    }
  matmul(ex, lw.ffn_gate_shexp.view(), s.shq, s.sh_gate.data());
  matmul(ex, lw.ffn_up_shexp.view(), s.shq, s.sh_up.data());
  for_rows(ex, T, 3.0 * Fs * sizeof(float), [&](int t) {
    for (size_t i = size_t(t) * Fs; i < size_t(t + 1) * Fs; i++)
      s.sh_mid[i] = ex.exact ? swiglu_clamped<ExactMath>(s.sh_gate[i], s.sh_up[i], clamp)
                             : moe_arith::swiglu(s.sh_gate[i], s.sh_up[i], clamp);
  });
  project(ex, lw.ffn_down_shexp, s.sh_mid.data(), T, s.sh_out.data(), s.shq);

  for_rows(ex, T, double(K + 2) * D * sizeof(float), [&](int t) {
    const float* sh = s.sh_out.data() + size_t(t) * D;
    float* o = ffn_out + size_t(t) * D;
    for (uint32_t r = 0; r < D; r++) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < K; k++) acc += s.down[size_t(s.at[size_t(t) * K + k]) * D + r];
      o[r] = acc + sh[r];
    }
  });
}

}  // namespace ds4::model
