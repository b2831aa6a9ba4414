// Layer-major batched forward pass; see forward.hpp. Stage arithmetic lives in the stage files
// (hyper_connection, rope, compressor, indexer, attention, moe, output_head); this file only
// orders the stages the way antirez/ds4's layer_forward_raw_swa_one does for each token.
#include "engine/model/forward.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/attention.hpp"
#include "engine/model/compressor.hpp"
#include "engine/model/indexer.hpp"
#include "engine/model/kv_format.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/model/rope.hpp"

namespace ds4::model {
namespace {

template <class V>
float* sized(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// HC pre for T tokens: split[t] and the sublayer input x[t] (T x n_embd), then RMSNorm into xn.
void hc_pre_batch(const Exec& ex, const ModelConfig& cfg, const HcWeights& hw, const Tensor& norm, const float* H,
                  int T, ForwardScratch& s) {
  const uint32_t hc = cfg.hc_dim(), D = cfg.n_embd, mixn = cfg.hc_mix();
  float* flat = sized(s.flat, size_t(T) * hc);
  float* mix = sized(s.mix, size_t(T) * mixn);
  float* x = sized(s.x, size_t(T) * D);
  float* xn = sized(s.xn, size_t(T) * D);
  if (s.split.size() < size_t(T)) s.split.resize(T);
  const double row_bytes = double(hc) * sizeof(float);
  for_rows(ex, T, row_bytes,
           [&](int t) { rms_norm(ex, flat + size_t(t) * hc, H + size_t(t) * hc, nullptr, hc, cfg.rms_eps); });
  project(ex, hw.fn, flat, T, mix, s.qa);
  for_rows(ex, T, row_bytes, [&](int t) {
    hc_split(mix + size_t(t) * mixn, hw.scale.f32(), hw.base.f32(), cfg.n_hc, cfg.sinkhorn_iters, cfg.hc_eps, ex.exact,
             s.split[t]);
    hc_weighted_sum(H + size_t(t) * hc, s.split[t].pre, D, cfg.n_hc, x + size_t(t) * D);
    rms_norm(ex, xn + size_t(t) * D, x + size_t(t) * D, norm.f32(), D, cfg.rms_eps);
  });
}

// HC post for T tokens: H_out[t] from the sublayer's output y[t] and its input H[t].
void hc_post_batch(const Exec& ex, const ModelConfig& cfg, const float* y, const float* H, int T, float* H_out,
                   const ForwardScratch& s) {
  const uint32_t hc = cfg.hc_dim(), D = cfg.n_embd;
  for_rows(ex, T, 2.0 * hc * sizeof(float), [&](int t) {
    hc_post(y + size_t(t) * D, H + size_t(t) * hc, s.split[t], D, cfg.n_hc, H_out + size_t(t) * hc);
  });
}

// One token into a compressor (attention or indexer): its inputs are remembered for rollback and
// added to the open window; when that completes a window, the pooled row is normalised, roped at
// the window's first position and appended to `rows`. `pooled` is scratch of `dim` floats.
void compress_token(const Exec& ex, CompressorHistory& hist, CompressorState& cmp, RowStore& rows,
                    const CompressorWeights& w, const float* kv, const float* score, uint32_t pos, uint32_t ratio,
                    uint32_t dim, CompressedRowKind kind, const ModelConfig& cfg, const RopeParams& rope,
                    float* pooled) {
  hist.record(pos, kv, score);
  if (!compressor_store(cmp, kv, score, w.ape.f16(), pos)) return;
  compressor_pool(cmp, ex.exact, pooled);
  compressed_row_finish(ex, pooled, dim, w.norm.f32(), cfg.rms_eps, rope, pos + 1 - ratio, kind);
  std::memcpy(rows.append(), pooled, dim * sizeof(float));
}

void attention_sublayer(const Model::Impl& m, const BlockSpec& b, const RowSlot* rows, const float* H, int T,
                        float* H_out, ForwardScratch& s) {
  const ModelConfig& cfg = m.cfg;
  const LayerWeights& lw = *b.w;
  const Exec& ex = m.ex;
  const RopeParams& rope = *b.rope;
  const uint32_t il = b.state;
  const uint32_t D = cfg.n_embd, hd = cfg.head_dim, qd = cfg.q_dim(), ql = cfg.q_lora_rank;
  const uint32_t ratio = b.ratio;

  hc_pre_batch(ex, cfg, lw.hc_attn, lw.attn_norm, H, T, s);
  const float* xn = s.xn.data();

  // Batched projections.
  float* qr = sized(s.qr, size_t(T) * ql);
  float* qrn = sized(s.qrn, size_t(T) * ql);
  float* q = sized(s.q, size_t(T) * qd);
  float* kv = sized(s.kv, size_t(T) * hd);
  project(ex, lw.attn_q_a, xn, T, qr, s.qa);
  for_rows(ex, T, double(ql) * sizeof(float), [&](int t) {
    rms_norm(ex, qrn + size_t(t) * ql, qr + size_t(t) * ql, lw.attn_q_a_norm.f32(), ql, cfg.rms_eps);
  });
  project(ex, lw.attn_q_b, qrn, T, q, s.qa);
  for_rows(ex, T, double(qd) * sizeof(float), [&](int t) {
    for (uint32_t h = 0; h < cfg.n_head; h++) {
      float* qh = q + size_t(t) * qd + size_t(h) * hd;
      rms_norm(ex, qh, qh, nullptr, hd, cfg.rms_eps);
    }
  });
  float* kvr = sized(s.kvr, size_t(T) * hd);
  project(ex, lw.attn_kv, xn, T, kvr, s.qa);
  for_rows(ex, T, double(hd) * sizeof(float), [&](int t) {
    rms_norm(ex, kv + size_t(t) * hd, kvr + size_t(t) * hd, lw.attn_kv_a_norm.f32(), hd, cfg.rms_eps);
  });

  // Widths come from the configuration, so every row's state agrees with row 0's.
  const LayerState& st0 = (*rows[0].layers)[il];
  uint32_t cw = 0, iwid = 0;
  if (ratio != 0) {
    cw = st0.attn_cmp.width;
    project(ex, lw.attn_compressor.kv, xn, T, sized(s.ckv, size_t(T) * cw), s.qa);
    project(ex, lw.attn_compressor.gate, xn, T, sized(s.csc, size_t(T) * cw), s.qa);
  }
  const uint32_t iqd = cfg.idx_heads * cfg.idx_dim;
  if (ratio == 4) {
    iwid = st0.index_cmp.width;
    project(ex, lw.indexer_compressor.kv, xn, T, sized(s.ikv, size_t(T) * iwid), s.qa);
    project(ex, lw.indexer_compressor.gate, xn, T, sized(s.isc, size_t(T) * iwid), s.qa);
    project(ex, lw.indexer_q_b, qrn, T, sized(s.iq, size_t(T) * iqd), s.qa);
    project(ex, lw.indexer_proj, xn, T, sized(s.iw, size_t(T) * cfg.idx_heads), s.qa);
  }

  // Each token's query and kv row at its position (and the kv row's FP8 rounding): they depend
  // on no state, so the pool takes them before the sequential part.
  for_rows(ex, T, double(qd + hd) * sizeof(float), [&](int t) {
    float cs[512];
    rope_angles(rope, rows[t].pos, false, ex.exact, cs);
    rope_apply(q + size_t(t) * qd, cfg.n_head, hd, cfg.n_rot, cs);
    rope_apply(kv + size_t(t) * hd, 1, hd, cfg.n_rot, cs);
    fp8_kv_row_inplace(kv + size_t(t) * hd, hd, cfg.n_rot);
  });

  // Sequential, stateful part.
  float* heads = sized(s.heads, size_t(T) * qd);
  float* pooled = sized(s.pooled, hd > cfg.idx_dim ? hd : cfg.idx_dim);
  const float* sinks = lw.attn_sinks.f32();
  for (int t = 0; t < T; t++) {
    LayerState& st = (*rows[t].layers)[il];
    const uint32_t pos = rows[t].pos;
    float* qt = q + size_t(t) * qd;
    float* kvt = kv + size_t(t) * hd;
    float* slot = st.push_raw_slot();
    for (uint32_t i = 0; i < hd; i++) slot[i] = round_f16(kvt[i]);

    const uint8_t* allowed = nullptr;
    if (ratio != 0) {
      compress_token(ex, st.attn_hist, st.attn_cmp, st.comp, lw.attn_compressor, s.ckv.data() + size_t(t) * cw,
                     s.csc.data() + size_t(t) * cw, pos, ratio, hd, CompressedRowKind::Attention, cfg, rope, pooled);
      if (ratio == 4) {
        const uint32_t id = cfg.idx_dim;
        compress_token(ex, st.index_hist, st.index_cmp, st.index_comp, lw.indexer_compressor,
                       s.ikv.data() + size_t(t) * iwid, s.isc.data() + size_t(t) * iwid, pos, ratio, id,
                       CompressedRowKind::Indexer, cfg, rope, pooled);
        if (st.index_comp.n > 0) {
          float* iqt = s.iq.data() + size_t(t) * iqd;
          float* iwt = s.iw.data() + size_t(t) * cfg.idx_heads;
          if (st.index_comp.n > cfg.idx_top_k) {
            float cs_fwd[512];
            rope_angles(rope, pos, false, ex.exact, cs_fwd);
            rope_apply(iqt, cfg.idx_heads, id, cfg.n_rot, cs_fwd);
            for (uint32_t h = 0; h < cfg.idx_heads; h++) indexer_qat_row_inplace(iqt + size_t(h) * id, id);
            const float scale = 1.0f / std::sqrt(float(id * cfg.idx_heads));
            for (uint32_t h = 0; h < cfg.idx_heads; h++) iwt[h] *= scale;
          }
          indexer_select(iqt, iwt, cfg.idx_heads, st.index_comp, cfg.idx_top_k, ex.exact, ex.isa, s.allowed, s.scores);
          if (s.allowed.size() < st.comp.n) throw std::logic_error("indexer and attention compressed rows disagree");
          allowed = s.allowed.data();
        }
      }
    }
    attend(st, qt, cfg.n_head, sinks, allowed, ex.exact, ex.isa, *ex.pool, heads + size_t(t) * qd);
  }
  // The heads' outputs back from their positions, again row by row on the pool.
  for_rows(ex, T, double(qd) * sizeof(float), [&](int t) {
    float cs[512];
    rope_angles(rope, rows[t].pos, true, ex.exact, cs);
    rope_apply(heads + size_t(t) * qd, cfg.n_head, hd, cfg.n_rot, cs);
  });

  // Grouped output projection, then back to the embedding width.
  float* low = sized(s.low, size_t(T) * cfg.n_out_group * cfg.out_lora_rank);
  grouped_output(ex, cfg, lw.attn_output_a, heads, T, low, s.qa, s.low_g);
  float* attn_out = sized(s.attn_out, size_t(T) * D);
  project(ex, lw.attn_output_b, low, T, attn_out, s.qa);
  hc_post_batch(ex, cfg, attn_out, H, T, H_out, s);
}

void ffn_sublayer(const Model::Impl& m, const BlockSpec& b, const int32_t* tokens, const float* H, int T, float* H_out,
                  ForwardScratch& s) {
  const ModelConfig& cfg = m.cfg;
  const LayerWeights& lw = *b.w;
  const uint32_t D = cfg.n_embd;
  hc_pre_batch(m.ex, cfg, lw.hc_ffn, lw.ffn_norm, H, T, s);
  float* ffn_out = sized(s.ffn_out, size_t(T) * D);
  moe_forward(m.ex, cfg, lw, b.hash, b.clamp, s.xn.data(), tokens, T, ffn_out, s.moe);
  hc_post_batch(m.ex, cfg, ffn_out, H, T, H_out, s);
}

}  // namespace

BlockSpec block_spec(const Model::Impl& m, uint32_t il) {
  return BlockSpec{&m.w.layers[il],         &m.rope[il],           m.cfg.compress_ratio[il], il,
                   il < m.cfg.n_hash_layer, m.cfg.swiglu_clamp[il]};
}

void block_forward(const Model::Impl& m, const BlockSpec& b, const RowSlot* rows, const int32_t* tokens, const float* H,
                   int T, float* H_mid, float* H_out, ForwardScratch& s) {
  attention_sublayer(m, b, rows, H, T, H_mid, s);
  ffn_sublayer(m, b, tokens, H_mid, T, H_out, s);
}

void check_token_ids(const ModelConfig& cfg, const int32_t* tokens, int T) {
  for (int t = 0; t < T; t++)
    if (tokens[t] < 0 || uint32_t(tokens[t]) >= cfg.n_vocab)
      throw std::out_of_range("token id " + std::to_string(tokens[t]) + " is outside the vocabulary (" +
                              std::to_string(cfg.n_vocab) + ")");
}

void embed_rows(const Model::Impl& m, const int32_t* tokens, int T, float* H) {
  const ModelConfig& cfg = m.cfg;
  const uint32_t D = cfg.n_embd, hc = cfg.hc_dim();
  const uint16_t* embd = m.w.token_embd.f16();
  check_token_ids(cfg, tokens, T);
  for (int t = 0; t < T; t++) {
    const uint16_t* row = embd + size_t(tokens[t]) * D;
    float* h0 = H + size_t(t) * hc;
    for (uint32_t i = 0; i < D; i++) h0[i] = f16_to_f32(row[i]);
    for (uint32_t h = 1; h < cfg.n_hc; h++) std::memcpy(h0 + size_t(h) * D, h0, D * sizeof(float));
  }
}

std::vector<LayerState> make_layer_states(const ModelConfig& cfg, uint32_t capacity, uint32_t rollback) {
  std::vector<LayerState> layers(cfg.n_layer);
  for (uint32_t il = 0; il < cfg.n_layer; il++) {
    LayerState& st = layers[il];
    st.ratio = cfg.compress_ratio[il];
    st.head_dim = cfg.head_dim;
    st.raw_window = std::max(1u, std::min(cfg.n_swa, capacity));
    st.raw_cap = std::max(1u, uint32_t(std::min<uint64_t>(uint64_t(cfg.n_swa) + rollback, capacity)));
    st.raw.assign(size_t(st.raw_cap) * cfg.head_dim, 0.0f);
    if (st.ratio != 0) {
      const uint32_t cap = capacity / st.ratio + 2;
      st.comp.init(cfg.head_dim, cap);
      st.attn_cmp.init(st.ratio, cfg.head_dim);
      st.attn_hist.init(st.attn_cmp.width, st.attn_cmp.rows + rollback);
      if (st.ratio == 4) {
        st.index_comp.init(cfg.idx_dim, cap);
        st.index_cmp.init(st.ratio, cfg.idx_dim);
        st.index_hist.init(st.index_cmp.width, st.index_cmp.rows + rollback);
      }
      st.set_base(0);
    }
  }
  return layers;
}

void truncate_layer_states(const Model::Impl& m, std::vector<LayerState>& layers, uint64_t size, uint64_t n) {
  const uint64_t k = size - n;
  // Check everything first, so a refusal leaves the state untouched.
  for (const LayerState& st : layers) {
    if (st.n_raw < k || st.n_raw - k < std::min<uint64_t>(n, st.raw_window))
      throw std::out_of_range("cannot roll back " + std::to_string(k) + " tokens: raw window history is too short");
    if ((st.ratio != 0 && !compressor_can_rebuild(st.attn_cmp, st.attn_hist, st.base_pos, n)) ||
        (st.ratio == 4 && !compressor_can_rebuild(st.index_cmp, st.index_hist, st.base_pos, n)))
      throw std::out_of_range("cannot roll back to " + std::to_string(n) +
                              " tokens: the compressor history does not reach back far enough");
  }
  for (uint32_t il = 0; il < layers.size(); il++) {
    LayerState& st = layers[il];
    st.n_raw -= uint32_t(k);
    if (st.ratio == 0) continue;
    const LayerWeights& lw = m.w.layers[il];
    st.comp.n = uint32_t(n / st.ratio);
    compressor_rebuild(st.attn_cmp, st.attn_hist, st.attn_base, st.base_pos, lw.attn_compressor.ape.f16(), n);
    st.attn_hist.hi = std::max(st.attn_hist.lo, std::min(st.attn_hist.hi, n));
    if (st.ratio == 4) {
      st.index_comp.n = uint32_t(n / st.ratio);
      compressor_rebuild(st.index_cmp, st.index_hist, st.index_base, st.base_pos, lw.indexer_compressor.ape.f16(), n);
      st.index_hist.hi = std::max(st.index_hist.lo, std::min(st.index_hist.hi, n));
    }
  }
}

void forward_rows(const Model::Impl& m, const RowSlot* rows, const int32_t* tokens, int T, const int* logit_rows,
                  int n_logit_rows, float* logits, ForwardScratch& s, const std::function<void(uint32_t)>& on_layer) {
  const ModelConfig& cfg = m.cfg;
  const uint32_t hc = cfg.hc_dim();
  float* H = sized(s.H, size_t(T) * hc);
  float* H_mid = sized(s.H_mid, size_t(T) * hc);
  float* H_next = sized(s.H_next, size_t(T) * hc);
  embed_rows(m, tokens, T, H);
  for (uint32_t il = 0; il < cfg.n_layer; il++) {
    block_forward(m, block_spec(m, il), rows, tokens, H, T, H_mid, H_next, s);
    std::swap(H, H_next);
    if (on_layer) on_layer(il);
  }
  for (int t = 0; t < T; t++)
    if (rows[t].hidden) std::memcpy(rows[t].hidden, H + size_t(t) * hc, hc * sizeof(float));
  if (n_logit_rows == 0) return;
  // The head is per row, so it runs on the selected rows only; a consecutive run needs no copy.
  bool consecutive = true;
  for (int i = 1; i < n_logit_rows; i++) consecutive = consecutive && logit_rows[i] == logit_rows[0] + i;
  const float* Hsel = H + size_t(logit_rows[0]) * hc;
  if (!consecutive) {
    float* g = sized(s.H_sel, size_t(n_logit_rows) * hc);
    for (int i = 0; i < n_logit_rows; i++)
      std::memcpy(g + size_t(i) * hc, H + size_t(logit_rows[i]) * hc, hc * sizeof(float));
    Hsel = g;
  }
  output_head(m.ex, cfg, m.w, Hsel, n_logit_rows, logits, s.head);
}

void forward_batch(const Model::Impl& m, std::vector<LayerState>& layers, const int32_t* tokens, int T, uint32_t pos0,
                   bool all_logits, float* logits, ForwardScratch& s, const std::function<void(uint32_t)>& on_layer,
                   HiddenRing* hidden) {
  s.slots.resize(size_t(T));
  s.logit_rows.clear();
  for (int t = 0; t < T; t++) {
    const uint32_t pos = pos0 + uint32_t(t);
    s.slots[t] = RowSlot{&layers, pos, hidden ? hidden->slot(pos) : nullptr};
    if (all_logits || t == T - 1) s.logit_rows.push_back(t);
  }
  forward_rows(m, s.slots.data(), tokens, T, s.logit_rows.data(), int(s.logit_rows.size()), logits, s, on_layer);
  if (hidden)
    for (int t = 0; t < T; t++) hidden->mark(pos0 + uint32_t(t));
}

}  // namespace ds4::model
