// See device_attention.hpp. Each step names the CPU code it mirrors in forward.cpp; the host
// supplies what follows from positions alone (RoPE tables, ring slots, row addresses).
#include "engine/model/device/device_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/cuda/act_quant.hpp"
#include "engine/cuda/attention.hpp"
#include "engine/cuda/grouped_output.hpp"
#include "engine/cuda/hyper_connection.hpp"
#include "engine/cuda/indexer.hpp"
#include "engine/cuda/kv_format.hpp"
#include "engine/cuda/rms_norm.hpp"
#include "engine/cuda/rope.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/device/device_linear.hpp"

namespace ds4::model::device {
namespace {

constexpr size_t F = sizeof(float);

// One token's kv and score rows into a compressor; a completed window is finished (RMSNorm,
// RoPE at its first position, the row format, f16) into the next row of its store.
void compress_token(const DeviceWeights& dw, const ModelConfig& cfg, const CompressorWeights& w, const RopeParams& rope,
                    cuda::DeviceCompressor& cmp, cuda::DeviceSpan kv, cuda::DeviceSpan score, uint32_t pos,
                    uint32_t dim, cuda::KvFormat fmt, uint64_t (DeviceLayerState::*append)(), DeviceLayerState& st,
                    AttentionScratch& s) {
  const cuda::DeviceSpan pooled = grown(s.pooled, dim);
  if (cuda::compressor_tokens(cmp, kv, score, dw.at(w.ape), 1, pos, pooled) == 0) return;
  std::vector<float> cs(rope.n_rot);
  rope_angles(rope, pos + 1 - uint32_t(cmp.ratio), false, false, cs.data());
  const cuda::DeviceSpan dcs = grown(s.ccs, cs.size());
  dcs.upload(cs.data(), cs.size() * F);
  const uint64_t row = (st.*append)();
  const cuda::DeviceSpan dst = grown<uint64_t>(s.cslot, 1);
  dst.upload(&row, sizeof row);
  cuda::compressed_rows_finish(pooled, 1, int32_t(dim), dw.at(w.norm), cfg.rms_eps, dcs, int32_t(rope.n_rot), fmt, dst);
}

// Each run's rows of a compressor's projected inputs (kv, score: T x width) into its history.
void record_inputs(std::span<const RowRun> runs, DeviceHistory DeviceLayerState::*hist, cuda::DeviceSpan kv,
                   cuda::DeviceSpan score, uint32_t width) {
  size_t first = 0;
  for (const RowRun& r : runs) {
    const size_t at = first * width * F, bytes = size_t(r.n) * width * F;
    (r.st->*hist).record(r.pos0, uint32_t(r.n), kv.sub(at, bytes), score.sub(at, bytes));
    first += size_t(r.n);
  }
}

}  // namespace

void attention_sublayer(const DeviceWeights& dw, const ModelConfig& cfg, const LayerWeights& lw, const RopeParams& rope,
                        std::span<const RowRun> runs, cuda::DeviceSpan H, int T, cuda::DeviceSpan H_out,
                        LayerScratch& ls, AttentionScratch& s) {
  const uint32_t D = cfg.n_embd, hd = cfg.head_dim, qd = cfg.q_dim(), ql = cfg.q_lora_rank, nh = cfg.n_head;
  int covered = 0;
  for (const RowRun& r : runs) covered += r.n;
  if (runs.empty() || covered != T) throw std::invalid_argument("device attention: the runs do not cover the T rows");
  const DeviceLayerState& st0 = *runs[0].st;
  const uint32_t ratio = st0.ratio, n_rot = rope.n_rot;
  hc_pre(dw, cfg, lw.hc_attn, lw.attn_norm, H, T, ls);
  const cuda::DeviceSpan xn = cuda::DeviceSpan(ls.xn).sub(0, size_t(T) * D * F);

  // Batched projections (forward.cpp: qr, qrn, q with per-head norm, kv).
  const cuda::DeviceSpan qr = grown(s.qr, size_t(T) * ql), qrn = grown(s.qrn, size_t(T) * ql),
                         q = grown(s.q, size_t(T) * qd), kvr = grown(s.kvr, size_t(T) * hd),
                         kv = grown(s.kv, size_t(T) * hd);
  project(dw.matrix(lw.attn_q_a), xn, T, qr, s.act);
  cuda::rms_norm(qr, dw.at(lw.attn_q_a_norm), qrn, T, ql, cfg.rms_eps);
  project(dw.matrix(lw.attn_q_b), qrn, T, q, s.act);
  cuda::rms_norm(q, {}, q, int64_t(T) * nh, hd, cfg.rms_eps);
  project(dw.matrix(lw.attn_kv), xn, T, kvr, s.act);
  cuda::rms_norm(kvr, dw.at(lw.attn_kv_a_norm), kv, T, hd, cfg.rms_eps);
  uint32_t cw = 0, iwid = 0;
  const uint32_t id = cfg.idx_dim, iqd = cfg.idx_heads * cfg.idx_dim;
  cuda::DeviceSpan ckv, csc, ikv, isc, iq, iw;
  if (ratio != 0) {
    cw = uint32_t(st0.attn_cmp->width);
    ckv = grown(s.ckv, size_t(T) * cw);
    csc = grown(s.csc, size_t(T) * cw);
    project(dw.matrix(lw.attn_compressor.kv), xn, T, ckv, s.act);
    project(dw.matrix(lw.attn_compressor.gate), xn, T, csc, s.act);
    record_inputs(runs, &DeviceLayerState::attn_hist, ckv, csc, cw);
  }
  if (ratio == 4) {
    iwid = uint32_t(st0.index_cmp->width);
    ikv = grown(s.ikv, size_t(T) * iwid);
    isc = grown(s.isc, size_t(T) * iwid);
    iq = grown(s.iq, size_t(T) * iqd);
    iw = grown(s.iw, size_t(T) * cfg.idx_heads);
    project(dw.matrix(lw.indexer_compressor.kv), xn, T, ikv, s.act);
    project(dw.matrix(lw.indexer_compressor.gate), xn, T, isc, s.act);
    record_inputs(runs, &DeviceLayerState::index_hist, ikv, isc, iwid);
    project(dw.matrix(lw.indexer_q_b), qrn, T, iq, s.act);
    project(dw.matrix(lw.indexer_proj), xn, T, iw, s.act);
  }

  // Row by row, the stateful part, each row on its own sequence's state.
  const cuda::DeviceSpan heads = grown(s.heads, size_t(T) * qd);
  const cuda::DeviceSpan sinks = dw.at(lw.attn_sinks);
  std::vector<float> cs(n_rot);
  std::vector<uint64_t> rows;
  size_t run = 0;
  int run_first = 0;
  for (int t = 0; t < T; t++) {
    while (t >= run_first + runs[run].n) run_first += runs[run++].n;
    DeviceLayerState& st = *runs[run].st;
    const uint32_t pos = runs[run].pos0 + uint32_t(t - run_first);
    const cuda::DeviceSpan qt = q.sub(size_t(t) * qd * F, qd * F), kvt = kv.sub(size_t(t) * hd * F, hd * F);
    rope_angles(rope, pos, false, false, cs.data());
    const cuda::DeviceSpan cs_fwd = grown(s.cs, n_rot);
    cs_fwd.upload(cs.data(), n_rot * F);
    cuda::rope(qt, cs_fwd, 1, int32_t(nh), int32_t(hd), int32_t(n_rot));
    cuda::rope(kvt, cs_fwd, 1, 1, int32_t(hd), int32_t(n_rot));
    const uint64_t slot = st.push_raw_slot();
    const cuda::DeviceSpan dslot = grown<uint64_t>(s.slot, 1);
    dslot.upload(&slot, sizeof slot);
    cuda::kv_raw_store(kvt, 1, int32_t(hd), int32_t(n_rot), dslot);

    int32_t n_visible = int32_t(st.n_visible_raw());
    rows.resize(size_t(n_visible) + st.comp_n + 1);
    for (int32_t r = 0; r < n_visible; r++) rows[size_t(r)] = st.visible_raw_row(uint32_t(r));
    bool indexed = false;
    if (ratio != 0) {
      compress_token(dw, cfg, lw.attn_compressor, rope, *st.attn_cmp, ckv.sub(size_t(t) * cw * F, cw * F),
                     csc.sub(size_t(t) * cw * F, cw * F), pos, hd, cuda::KvFormat::Fp8, &DeviceLayerState::append_comp,
                     st, s);
      if (ratio == 4) {
        compress_token(dw, cfg, lw.indexer_compressor, rope, *st.index_cmp, ikv.sub(size_t(t) * iwid * F, iwid * F),
                       isc.sub(size_t(t) * iwid * F, iwid * F), pos, id, cuda::KvFormat::Fp4Hadamard,
                       &DeviceLayerState::append_index, st, s);
        indexed = st.index_n > 0;
      }
    }
    const cuda::DeviceSpan visible = grown<uint64_t>(s.visible, size_t(n_visible) + st.comp_n + 1);
    const cuda::DeviceSpan ht = heads.sub(size_t(t) * qd * F, qd * F);
    if (indexed) {
      // forward.cpp: the query heads roped and Hadamard+FP4'd only when the indexer must choose.
      const cuda::DeviceSpan iqt = iq.sub(size_t(t) * iqd * F, iqd * F);
      const cuda::DeviceSpan iwt = iw.sub(size_t(t) * cfg.idx_heads * F, cfg.idx_heads * F);
      if (st.index_n > cfg.idx_top_k) {
        cuda::rope(iqt, cs_fwd, 1, int32_t(cfg.idx_heads), int32_t(id), int32_t(n_rot));
        cuda::kv_format_rows(iqt, int32_t(cfg.idx_heads), int32_t(id), int32_t(n_rot), cuda::KvFormat::Fp4Hadamard,
                             false, {});
      }
      visible.upload(rows.data(), size_t(n_visible) * sizeof(uint64_t));
      const cuda::DeviceSpan count = grown<int32_t>(s.count, 1);
      const float wscale = 1.0f / std::sqrt(float(id * cfg.idx_heads));
      cuda::indexer_select(iqt, iwt, int32_t(cfg.idx_heads), int32_t(id), wscale, st.index_comp, int32_t(st.index_n),
                           int32_t(cfg.idx_top_k), grown(s.idx_scores, st.index_n), grown<uint8_t>(s.mask, st.index_n),
                           st.comp, int32_t(hd), visible, n_visible, count);
      // The chosen count stays on the device, where the attention reads it
      // (docs/cuda.md §host-round-trips); it is at most min(index rows, top-k).
      const int32_t n_max = n_visible + int32_t(std::min<uint32_t>(st.index_n, cfg.idx_top_k));
      cuda::attention_fast_counted(qt, visible, n_visible, count, n_max, int32_t(nh), int32_t(hd), sinks,
                                   grown(s.scores, size_t(n_max) * nh + 1), ht);
    } else {
      for (uint32_t c = 0; c < st.comp_n; c++) rows[size_t(n_visible++)] = st.comp.ptr() + uint64_t(c) * hd * F;
      if (n_visible > 0) visible.upload(rows.data(), size_t(n_visible) * sizeof(uint64_t));
      cuda::attention_fast(qt, visible, n_visible, int32_t(nh), int32_t(hd), sinks,
                           grown(s.scores, size_t(n_visible) * nh + 1), ht);
    }
    rope_angles(rope, pos, true, false, cs.data());
    cs_fwd.upload(cs.data(), n_rot * F);
    cuda::rope(ht, cs_fwd, 1, int32_t(nh), int32_t(hd), int32_t(n_rot));
  }

  // Grouped output projection, back to the embedding width, HC post.
  const uint32_t low_n = cfg.n_out_group * cfg.out_lora_rank;
  const cuda::DeviceSpan low = grown(s.low, size_t(T) * low_n), attn_out = grown(s.attn_out, size_t(T) * D);
  const size_t arb = quant::act_row_bytes(quant::Type::Q8_0, qd);
  const cuda::DeviceSpan hq = grown<uint8_t>(s.hq, arb * size_t(T));
  cuda::quantize_activation(quant::Type::Q8_0, heads, T, qd, hq);
  for (int t0 = 0; t0 < T; t0 += cuda::kMaxMatvecWidth) {
    const int n = T - t0 < cuda::kMaxMatvecWidth ? T - t0 : cuda::kMaxMatvecWidth;
    cuda::grouped_output(dw.matrix(lw.attn_output_a), int(cfg.n_out_group), hq.sub(arb * size_t(t0), arb * size_t(n)),
                         arb, n, low.sub(size_t(t0) * low_n * F, size_t(n) * low_n * F));
  }
  project(dw.matrix(lw.attn_output_b), low, T, attn_out, s.act);
  cuda::hc_post(attn_out, H, ls.split, T, cfg.n_hc, D, H_out);
}

}  // namespace ds4::model::device
