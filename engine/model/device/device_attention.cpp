// See device_attention.hpp. Each step names the CPU code it mirrors in forward.cpp; the host
// supplies what follows from positions alone (RoPE tables, ring slots, row addresses), built for
// all rows before anything runs (docs/cuda.md §attention-rows).
#include "engine/model/device/device_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
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

// Host arrays uploaded to the device in one copy: add() reserves an 8-byte aligned array and
// returns its offset; pointers are taken once every array is added.
struct HostTable {
  std::vector<uint64_t> words;
  template <class V>
  size_t add(size_t n) {
    const size_t at = words.size() * sizeof(uint64_t);
    words.resize(words.size() + (n * sizeof(V) + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
    return at;
  }
  template <class V>
  V* at(size_t offset) {
    return reinterpret_cast<V*>(reinterpret_cast<uint8_t*>(words.data()) + offset);
  }
  size_t bytes() const { return words.size() * sizeof(uint64_t); }
};

// A sequence's state before the pass, what its rows see of it (docs/cuda.md §attention-rows).
struct RunStart {
  uint32_t n_raw = 0, raw_head = 0, comp_n = 0, index_n = 0;
};

// One row of the pass: what it sees, from positions alone, as forward.cpp's row loop would have it.
struct RowView {
  uint32_t raw = 0;      // visible raw rows: the ring's before the pass, then the pass's own
  uint32_t comp = 0;     // compressed rows the attention sees in full (not chosen by the indexer)
  uint32_t index_n = 0;  // indexer rows (ratio 4)
  bool choose = false;   // the indexer chooses top_k of them on the device
};

RowView row_view(const DeviceLayerState& st, const RunStart& r0, uint32_t pos0, uint32_t j, uint32_t top_k) {
  RowView v;
  v.raw = std::min(std::min(r0.n_raw + j + 1, st.raw_cap), st.raw_window);
  if (st.ratio == 0) return v;
  const uint32_t windows = uint32_t(cuda::compressor_windows(int32_t(st.ratio), pos0, int32_t(j) + 1));
  v.comp = r0.comp_n + windows;
  if (st.ratio != 4) return v;
  v.index_n = r0.index_n + windows;
  if (v.index_n == 0) return v;  // not indexed: every compressed row (none yet)
  v.choose = v.index_n > top_k;
  v.comp = v.choose ? 0 : v.index_n;  // indexed without a choice: all indexer rows' compressed rows
  return v;
}

// The entries a row's list holds (the chosen rows at most top_k).
uint32_t row_slots(const RowView& v, uint32_t top_k) { return v.raw + v.comp + (v.choose ? top_k : 0); }

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

  // The stateful part for all rows at once, each row on its own sequence's state as forward.cpp's
  // row loop leaves it (docs/cuda.md §attention-rows): every list, table and slot follows from
  // positions, so the host builds them before anything runs and uploads them in one copy.
  const uint32_t top_k = cfg.idx_top_k;
  std::vector<RunStart> starts(runs.size());
  std::vector<size_t> run_first(runs.size());  // each run's first row in the pass
  std::vector<uint32_t> row_run(static_cast<size_t>(T));
  for (size_t r = 0, t = 0; r < runs.size(); r++) {
    const DeviceLayerState& st = *runs[r].st;
    starts[r] = {st.n_raw, st.raw_head, st.comp_n, st.index_n};
    run_first[r] = t;
    for (int j = 0; j < runs[r].n; j++) row_run[t++] = uint32_t(r);
  }
  const auto row_j = [&](int t) { return uint32_t(size_t(t) - run_first[row_run[size_t(t)]]); };
  std::vector<int32_t> attn_windows(runs.size()), ring_rows(runs.size());
  HostTable pass;
  const size_t cs_fwd = pass.add<float>(size_t(T) * n_rot), cs_inv = pass.add<float>(size_t(T) * n_rot),
               pass_dst = pass.add<uint64_t>(size_t(T));
  std::vector<size_t> cmp_cs(runs.size()), cmp_dst(runs.size()), ring_dst(runs.size());
  int32_t most_windows = 0;
  for (size_t r = 0; r < runs.size(); r++) {
    const DeviceLayerState& st = *runs[r].st;
    attn_windows[r] = ratio != 0 ? cuda::compressor_windows(int32_t(ratio), runs[r].pos0, runs[r].n) : 0;
    most_windows = std::max(most_windows, attn_windows[r]);
    // Both compressors of a ratio-4 layer complete the same windows; the attention's rows come
    // first in each run's arrays, then the indexer's.
    const size_t rows = size_t(attn_windows[r]) * (ratio == 4 ? 2 : 1);
    cmp_cs[r] = pass.add<float>(rows * n_rot);
    cmp_dst[r] = pass.add<uint64_t>(rows);
    ring_rows[r] = int32_t(std::min<uint32_t>(uint32_t(runs[r].n), st.raw_cap));
    ring_dst[r] = pass.add<uint64_t>(size_t(ring_rows[r]));
  }
  const cuda::DeviceSpan raw_pass = grown(s.raw_pass, size_t(T) * hd);
  for (size_t r = 0; r < runs.size(); r++) {
    DeviceLayerState& st = *runs[r].st;
    const uint32_t pos0 = runs[r].pos0;
    float* ccs = pass.at<float>(cmp_cs[r]);
    uint64_t* cdst = pass.at<uint64_t>(cmp_dst[r]);
    const size_t k = size_t(attn_windows[r]);
    for (int j = 0; j < runs[r].n; j++) {
      const size_t t = run_first[r] + size_t(j);
      const uint32_t pos = pos0 + uint32_t(j);
      rope_angles(rope, pos, false, false, pass.at<float>(cs_fwd) + t * n_rot);
      rope_angles(rope, pos, true, false, pass.at<float>(cs_inv) + t * n_rot);
      pass.at<uint64_t>(pass_dst)[t] = raw_pass.ptr() + uint64_t(t) * hd * F;
      if (ratio != 0 && cuda::compressor_windows(int32_t(ratio), pos, 1) == 1) {
        // forward.cpp's compressed_row_finish: RoPE at the window's first position.
        rope_angles(rope, pos + 1 - ratio, false, false, ccs);
        *cdst = st.append_comp();
        if (ratio == 4) {
          std::copy(ccs, ccs + n_rot, ccs + k * n_rot);
          cdst[k] = st.append_index();
        }
        ccs += n_rot;
        cdst++;
      }
      const uint64_t slot = st.push_raw_slot();
      if (j >= runs[r].n - ring_rows[r]) pass.at<uint64_t>(ring_dst[r])[j - (runs[r].n - ring_rows[r])] = slot;
    }
  }
  const cuda::DeviceSpan pass_dev = grown<uint8_t>(s.pass_table, pass.bytes());
  pass_dev.upload(pass.words.data(), pass.bytes());
  const cuda::DeviceSpan cs_all = pass_dev.sub(cs_fwd, size_t(T) * n_rot * F);

  // RoPE of every row's q and kv; every row's raw row into the pass's own copy, which the rows
  // after it read (the ring takes the newest rows once the attention has read the older ones).
  cuda::rope(q, cs_all, T, int32_t(nh), int32_t(hd), int32_t(n_rot));
  cuda::rope(kv, cs_all, T, 1, int32_t(hd), int32_t(n_rot));
  cuda::kv_format_rows(kv, T, int32_t(hd), int32_t(n_rot), cuda::KvFormat::Fp8, true,
                       pass_dev.sub(pass_dst, size_t(T) * sizeof(uint64_t)));

  // The compressors: each run's tokens in one launch, its completed windows finished into the
  // store's next rows.
  if (ratio != 0) {
    const uint32_t widest = ratio == 4 ? std::max(hd, id) : hd;
    const cuda::DeviceSpan pooled = grown(s.pooled, size_t(std::max(most_windows, 1)) * widest);
    for (size_t r = 0; r < runs.size(); r++) {
      DeviceLayerState& st = *runs[r].st;
      const size_t k = size_t(attn_windows[r]), n = size_t(runs[r].n), first = run_first[r];
      const auto finish = [&](cuda::DeviceCompressor& cmp, cuda::DeviceSpan in_kv, cuda::DeviceSpan in_sc, uint32_t w,
                              const CompressorWeights& cw_, uint32_t dim, cuda::KvFormat fmt, size_t at) {
        const int32_t done =
            cuda::compressor_tokens(cmp, in_kv.sub(first * w * F, n * w * F), in_sc.sub(first * w * F, n * w * F),
                                    dw.at(cw_.ape), runs[r].n, runs[r].pos0, pooled);
        cuda::compressed_rows_finish(pooled, done, int32_t(dim), dw.at(cw_.norm), cfg.rms_eps,
                                     pass_dev.sub(cmp_cs[r] + at * n_rot * F, k * n_rot * F), int32_t(n_rot), fmt,
                                     pass_dev.sub(cmp_dst[r] + at * sizeof(uint64_t), k * sizeof(uint64_t)));
      };
      finish(*st.attn_cmp, ckv, csc, cw, lw.attn_compressor, hd, cuda::KvFormat::Fp8, 0);
      if (ratio == 4) finish(*st.index_cmp, ikv, isc, iwid, lw.indexer_compressor, id, cuda::KvFormat::Fp4Hadamard, k);
    }
  }

  // The rows' lists, a group at a time so that the scores stay within the workspace's budget
  // (AttentionScratch::group_slots): the raw window (the ring's rows, then the pass's), then the
  // compressed rows, all of them or the indexer's choice, which its kernels write on the device
  // (cuda::indexer_select_rows: three launches for the group's choosing rows).
  std::vector<RowView> views(static_cast<size_t>(T));
  for (int t = 0; t < T; t++) {
    const uint32_t r = row_run[size_t(t)];
    views[size_t(t)] = row_view(*runs[r].st, starts[r], runs[r].pos0, row_j(t), top_k);
  }
  bool any_choice = false;
  for (const RowView& v : views) any_choice = any_choice || v.choose;
  if (any_choice) {
    // forward.cpp: the query heads roped and Hadamard+FP4'd where the indexer must choose (other
    // rows' indexer queries are not read).
    cuda::rope(iq, cs_all, T, int32_t(cfg.idx_heads), int32_t(id), int32_t(n_rot));
    cuda::kv_format_rows(iq, T * int32_t(cfg.idx_heads), int32_t(id), int32_t(n_rot), cuda::KvFormat::Fp4Hadamard,
                         false, {});
  }
  const cuda::DeviceSpan heads = grown(s.heads, size_t(T) * qd);
  const cuda::DeviceSpan sinks = dw.at(lw.attn_sinks);
  const float wscale = 1.0f / std::sqrt(float(id * cfg.idx_heads));
  for (int g0 = 0; g0 < T;) {
    int g1 = g0;
    uint64_t slots = 0;
    uint32_t choices = 0;
    while (g1 < T && (g1 == g0 || slots + row_slots(views[size_t(g1)], top_k) <= s.group_slots)) {
      const RowView& v = views[size_t(g1++)];
      slots += row_slots(v, top_k);
      choices += v.choose ? 1 : 0;
    }
    const int n = g1 - g0;
    HostTable group;
    const size_t first_at = group.add<int32_t>(size_t(n) + 1), fixed_at = group.add<int32_t>(size_t(n)),
                 count_at = group.add<int32_t>(size_t(n)), rows_at = group.add<uint64_t>(slots),
                 choice_at = group.add<cuda::IndexerChoice>(choices);
    const cuda::DeviceSpan table = grown<uint8_t>(s.row_table, group.bytes());
    const cuda::DeviceSpan rows_dev = table.sub(rows_at, slots * sizeof(uint64_t)),
                           counts = table.sub(count_at, size_t(n) * sizeof(int32_t));
    int32_t* first = group.at<int32_t>(first_at);
    uint64_t* rows = group.at<uint64_t>(rows_at);
    cuda::IndexerChoice* choice = group.at<cuda::IndexerChoice>(choice_at);
    first[0] = 0;
    for (int t = g0; t < g1; t++) {
      const DeviceLayerState& st = *runs[row_run[size_t(t)]].st;
      const RunStart& r0 = starts[row_run[size_t(t)]];
      const RowView& v = views[size_t(t)];
      const uint32_t own = std::min(v.raw, row_j(t) + 1), ring = v.raw - own;
      uint64_t* e = rows + first[t - g0];
      for (uint32_t i = 0; i < ring; i++) {
        const uint32_t logical = r0.n_raw - ring + i;
        *e++ = st.raw.ptr() + uint64_t((r0.raw_head + logical) % st.raw_cap) * hd * F;
      }
      for (uint32_t i = 0; i < own; i++) *e++ = raw_pass.ptr() + uint64_t(t + 1 - int(own) + int(i)) * hd * F;
      for (uint32_t c = 0; c < v.comp; c++) *e++ = st.comp.ptr() + uint64_t(c) * hd * F;
      group.at<int32_t>(fixed_at)[t - g0] = int32_t(v.raw + v.comp);
      if (v.choose) {
        *choice++ = {iq.ptr() + uint64_t(t) * iqd * F,
                     iw.ptr() + uint64_t(t) * cfg.idx_heads * F,
                     st.index_comp.ptr(),
                     st.comp.ptr(),
                     rows_dev.ptr() + (uint64_t(first[t - g0]) + v.raw) * sizeof(uint64_t),
                     counts.ptr() + uint64_t(t - g0) * sizeof(int32_t),
                     int32_t(v.index_n),
                     0};
      }
      first[t - g0 + 1] = first[t - g0] + int32_t(row_slots(v, top_k));
    }
    // The indexer's choices, as many rows per launch as planner::kIndexerGroupRows indexer rows
    // allow (a row with more goes alone); each batch's offsets from 0.
    choice = group.at<cuda::IndexerChoice>(choice_at);
    std::vector<std::pair<uint32_t, int64_t>> batches;  // (rows, indexer rows)
    for (uint32_t c = 0; c < choices; c++) {
      if (batches.empty() || (batches.back().second + choice[c].n > int64_t(planner::kIndexerGroupRows)))
        batches.push_back({0, 0});
      choice[c].first = int32_t(batches.back().second);
      batches.back().first++;
      batches.back().second += choice[c].n;
    }
    table.upload(group.words.data(), group.bytes());
    size_t done = 0;
    for (const auto& [rows_in, total] : batches) {
      cuda::indexer_select_rows(
          table.sub(choice_at + done * sizeof(cuda::IndexerChoice), size_t(rows_in) * sizeof(cuda::IndexerChoice)),
          int32_t(rows_in), total, int32_t(cfg.idx_heads), int32_t(id), wscale, int32_t(top_k), int32_t(hd),
          grown(s.idx_scores, size_t(total)), grown<uint8_t>(s.mask, size_t(total)));
      done += rows_in;
    }
    const cuda::AttentionRows att{rows_dev,
                                  table.sub(first_at, (size_t(n) + 1) * sizeof(int32_t)),
                                  table.sub(fixed_at, size_t(n) * sizeof(int32_t)),
                                  counts,
                                  n,
                                  int32_t(slots)};
    cuda::attention_fast_rows(q.sub(size_t(g0) * qd * F, size_t(n) * qd * F), att, int32_t(nh), int32_t(hd), sinks,
                              grown(s.scores, slots * nh), heads.sub(size_t(g0) * qd * F, size_t(n) * qd * F));
    g0 = g1;
  }

  // The newest raw rows into each ring, now that every row has read the ring's older ones; the
  // heads back from RoPE.
  for (size_t r = 0; r < runs.size(); r++) {
    const size_t m = size_t(ring_rows[r]), first = run_first[r] + size_t(runs[r].n) - m;
    cuda::kv_raw_store(kv.sub(first * hd * F, m * hd * F), int32_t(m), int32_t(hd), int32_t(n_rot),
                       pass_dev.sub(ring_dst[r], m * sizeof(uint64_t)));
  }
  cuda::rope(heads, pass_dev.sub(cs_inv, size_t(T) * n_rot * F), T, int32_t(nh), int32_t(hd), int32_t(n_rot));

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
