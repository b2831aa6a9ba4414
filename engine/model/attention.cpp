// Sink attention in the Exact order; see attention.hpp (the Fast order: attention_fast.cpp). Per
// head the operation order is ds4's layer_attention_mixed_one: scores in row order with the
// running max seeded by the sink, then the denominator seeded with e^{sink - m} and the weighted
// sum accumulated row by row, finally a multiply by 1/denominator. Both implementations below
// keep that order exactly; the ordered one only changes which independent sums share a SIMD
// register or a thread.
#include "engine/model/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/kernels/ordered_simd.hpp"
#include "engine/model/numerics.hpp"

namespace ds4::model {

namespace {

// Exact mode: ds4's loop, head by head (heads in parallel).
void attend_reference(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
                      kernels::ThreadPool& pool, float* out_heads) {
  const uint32_t d = st.head_dim;
  const uint32_t n_raw = st.n_visible_raw();
  const uint32_t n_comp = st.ratio != 0 ? st.comp.n : 0;
  const float kq_scale = 1.0f / std::sqrt(float(d));
  constexpr float kNegInf = -1.0e30f;
  const double head_bytes = 2.0 * (double(n_raw) + n_comp) * d * sizeof(float);  // K rows read twice
  pool.parallel_for(n_head, kernels::ThreadPool::grain_for_bytes(head_bytes), [&](int64_t h0, int64_t h1) {
    thread_local std::vector<float> score;
    if (score.size() < size_t(n_raw) + n_comp) score.resize(size_t(n_raw) + n_comp);
    for (int64_t h = h0; h < h1; h++) {
      const float* qh = q + uint64_t(h) * d;
      float mx = sinks[h];
      for (uint32_t r = 0; r < n_raw; r++) {
        const float s = dot_f32_exact(qh, st.visible_raw_row(r), d) * kq_scale;
        score[r] = s;
        if (s > mx) mx = s;
      }
      for (uint32_t r = 0; r < n_comp; r++) {
        if (allowed && !allowed[r]) {
          score[n_raw + r] = kNegInf;
          continue;
        }
        const float s = dot_f32_exact(qh, st.comp.row(r), d) * kq_scale;
        score[n_raw + r] = s;
        if (s > mx) mx = s;
      }
      float* oh = out_heads + uint64_t(h) * d;
      std::memset(oh, 0, d * sizeof(float));
      float denom = std::exp(sinks[h] - mx);
      auto accumulate = [&](const float* k, float s) {
        const float w = std::exp(s - mx);
        denom += w;
        for (uint32_t i = 0; i < d; i++) oh[i] += w * k[i];
      };
      for (uint32_t r = 0; r < n_raw; r++) accumulate(st.visible_raw_row(r), score[r]);
      for (uint32_t r = 0; r < n_comp; r++) {
        const float s = score[n_raw + r];
        if (s <= kNegInf * 0.5f) continue;
        accumulate(st.comp.row(r), s);
      }
      const float inv = 1.0f / denom;
      for (uint32_t i = 0; i < d; i++) oh[i] *= inv;
    }
  });
}

// The same arithmetic with heads as SIMD lanes for the scores (rows in parallel)
// and vectorised accumulation (heads in parallel); bit-identical to attend_reference.
void attend_ordered(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
                    kernels::ThreadPool& pool, float* out_heads) {
  const uint32_t d = st.head_dim;
  const uint32_t n_comp = st.ratio != 0 ? st.comp.n : 0;
  const float kq_scale = 1.0f / std::sqrt(float(d));
  const uint32_t lanes = (n_head + 7) / 8 * 8;
  thread_local std::vector<float> qT, S;
  thread_local std::vector<const float*> rows;
  rows.clear();
  for (uint32_t r = 0; r < st.n_visible_raw(); r++) rows.push_back(st.visible_raw_row(r));
  for (uint32_t r = 0; r < n_comp; r++)
    if (!allowed || allowed[r]) rows.push_back(st.comp.row(r));
  const uint32_t n = uint32_t(rows.size());
  qT.assign(size_t(d) * lanes, 0.0f);
  for (uint32_t h = 0; h < n_head; h++)
    for (uint32_t i = 0; i < d; i++) qT[size_t(i) * lanes + h] = q[size_t(h) * d + i];
  S.resize(size_t(n) * lanes);
  const float* qTp = qT.data();
  float* Sp = S.data();
  const float* const* rp = rows.data();
  pool.parallel_for(n, kernels::ThreadPool::grain_for_bytes(double(d) * lanes * sizeof(float)),
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; r++) {
                        float* s = Sp + size_t(r) * lanes;
                        kernels::ordered::dot_lanes(qTp, lanes, rp[r], d, s);
                        for (uint32_t h = 0; h < n_head; h++) s[h] = s[h] * kq_scale;
                      }
                    });
  pool.parallel_for(n_head, kernels::ThreadPool::grain_for_bytes(double(n) * d * sizeof(float)),
                    [&](int64_t h0, int64_t h1) {
                      for (int64_t h = h0; h < h1; h++) {
                        float mx = sinks[h];
                        for (uint32_t r = 0; r < n; r++) mx = std::max(mx, Sp[size_t(r) * lanes + h]);
                        float* oh = out_heads + uint64_t(h) * d;
                        std::memset(oh, 0, d * sizeof(float));
                        float denom = std::exp(sinks[h] - mx);
                        for (uint32_t r = 0; r < n; r++) {
                          const float w = std::exp(Sp[size_t(r) * lanes + h] - mx);
                          denom += w;
                          kernels::ordered::axpy(oh, rp[r], w, d);
                        }
                        const float inv = 1.0f / denom;
                        for (uint32_t i = 0; i < d; i++) oh[i] *= inv;
                      }
                    });
}

}  // namespace

void attend(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
            bool exact, quant::Isa isa, kernels::ThreadPool& pool, float* out_heads) {
  if (!exact) attend_fast(st, q, n_head, sinks, allowed, isa, pool, out_heads);
  else if (!kernels::ordered::available()) attend_reference(st, q, n_head, sinks, allowed, pool, out_heads);
  else attend_ordered(st, q, n_head, sinks, allowed, pool, out_heads);
}

void grouped_output(const Exec& ex, const ModelConfig& cfg, const Tensor& output_a, const float* heads, int T,
                    float* low, QuantAct& qa, std::vector<float>& tmp) {
  const uint32_t G = cfg.n_out_group, rank = cfg.out_lora_rank, gd = cfg.group_dim();
  if (tmp.size() < size_t(T) * rank) tmp.resize(size_t(T) * rank);
  quantize_rows(ex, output_a.type, heads, T, int64_t(cfg.q_dim()), qa);
  for (uint32_t g = 0; g < G; g++) {
    const size_t act_off = quant::act_row_bytes(qa.type, int64_t(g) * gd);
    matmul_raw(ex, output_a.rows(int64_t(g) * rank, rank), qa.bytes.data() + act_off, qa.row_bytes, T, tmp.data());
    for (int t = 0; t < T; t++)
      std::memcpy(low + (size_t(t) * G + g) * rank, tmp.data() + size_t(t) * rank, rank * sizeof(float));
  }
}

}  // namespace ds4::model
