// Sink attention; see attention.hpp. Per head the operation order is ds4's
// layer_attention_mixed_one: scores in row order with the running max seeded by the sink,
// then the denominator seeded with e^{sink - m} and the weighted sum accumulated row by row,
// finally a multiply by 1/denominator. Heads are independent, so they run in parallel without
// changing any result.
#include "engine/model/attention.hpp"

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/numerics.hpp"

namespace ds4::model {

void attend(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
            bool exact, kernels::ThreadPool& pool, float* out_heads) {
  const uint32_t d = st.head_dim;
  const uint32_t n_raw = st.n_raw;
  const uint32_t n_comp = st.ratio != 0 ? st.comp.n : 0;
  const float kq_scale = 1.0f / std::sqrt(float(d));
  constexpr float kNegInf = -1.0e30f;
  pool.parallel_for(n_head, [&](int64_t h0, int64_t h1) {
    thread_local std::vector<float> score;
    if (score.size() < size_t(n_raw) + n_comp) score.resize(size_t(n_raw) + n_comp);
    for (int64_t h = h0; h < h1; h++) {
      const float* qh = q + uint64_t(h) * d;
      float mx = sinks[h];
      for (uint32_t r = 0; r < n_raw; r++) {
        const float* k = st.raw_row(r);
        const float s = (exact ? dot_f32_exact(qh, k, d) : dot_f32_fast(qh, k, d)) * kq_scale;
        score[r] = s;
        if (s > mx) mx = s;
      }
      for (uint32_t r = 0; r < n_comp; r++) {
        if (allowed && !allowed[r]) {
          score[n_raw + r] = kNegInf;
          continue;
        }
        const float* k = st.comp.row(r);
        const float s = (exact ? dot_f32_exact(qh, k, d) : dot_f32_fast(qh, k, d)) * kq_scale;
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
      for (uint32_t r = 0; r < n_raw; r++) accumulate(st.raw_row(r), score[r]);
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

void grouped_output(const Exec& ex, const ModelConfig& cfg, const Tensor& output_a, const float* heads, int T,
                    float* low, QuantAct& qa, std::vector<float>& tmp) {
  const uint32_t G = cfg.n_out_group, rank = cfg.out_lora_rank, gd = cfg.group_dim();
  if (tmp.size() < size_t(T) * rank) tmp.resize(size_t(T) * rank);
  quantize_rows(output_a.type, heads, T, int64_t(cfg.q_dim()), qa);
  for (uint32_t g = 0; g < G; g++) {
    const size_t act_off = quant::act_row_bytes(qa.type, int64_t(g) * gd);
    matmul_raw(ex, output_a.rows(int64_t(g) * rank, rank), qa.bytes.data() + act_off, qa.row_bytes, T, tmp.data());
    for (int t = 0; t < T; t++)
      std::memcpy(low + (size_t(t) * G + g) * rank, tmp.data() + size_t(t) * rank, rank * sizeof(float));
  }
}

}  // namespace ds4::model
