// Indexer scoring and top-k selection; see indexer.hpp. The selection is ds4's: top_k passes,
// each taking the highest-scoring row not yet taken (strict >, so the lowest index wins ties).
#include "engine/model/indexer.hpp"

#include "engine/kernels/ordered_simd.hpp"
#include "engine/model/numerics.hpp"

namespace ds4::model {

void indexer_select(const float* q, const float* w, uint32_t n_head, const RowStore& rows, uint32_t top_k, bool exact,
                    quant::Isa isa, std::vector<uint8_t>& allowed, std::vector<float>& scores) {
  const uint32_t n = rows.n, dim = rows.dim;
  allowed.assign(n, 0);
  if (top_k >= n) {
    allowed.assign(n, 1);
    return;
  }
  scores.resize(n);
  // score[c] = sum over heads in index order of max(dot(k_c, q_h), 0) * w[h], with the mode's dot.
  const auto score_rows = [&](auto&& dot) {
    for (uint32_t c = 0; c < n; c++) {
      const float* kv = rows.row(c);
      float s = 0.0f;
      for (uint32_t h = 0; h < n_head; h++) {
        float d = dot(kv, q + uint64_t(h) * dim);
        if (d < 0.0f) d = 0.0f;
        s += d * w[h];
      }
      scores[c] = s;
    }
  };
  if (!exact) {
    const quant::DotFn dot = quant::dot_fn(quant::traits(quant::Type::F32), isa);
    score_rows([&](const float* a, const float* b) { return dot(a, b, dim); });
  } else if (!kernels::ordered::available()) {
    score_rows([&](const float* a, const float* b) { return dot_f32_exact(a, b, dim); });
  } else {
    // Heads as SIMD lanes (each lane the reference's sequential dot), then the same
    // head-ordered sum: bit-identical to the loop above.
    const uint32_t lanes = (n_head + 7) / 8 * 8;
    thread_local std::vector<float> qT, dots;
    qT.assign(size_t(dim) * lanes, 0.0f);
    dots.resize(lanes);
    for (uint32_t h = 0; h < n_head; h++)
      for (uint32_t i = 0; i < dim; i++) qT[size_t(i) * lanes + h] = q[size_t(h) * dim + i];
    for (uint32_t c = 0; c < n; c++) {
      kernels::ordered::dot_lanes(qT.data(), lanes, rows.row(c), dim, dots.data());
      float s = 0.0f;
      for (uint32_t h = 0; h < n_head; h++) {
        float d = dots[h];
        if (d < 0.0f) d = 0.0f;
        s += d * w[h];
      }
      scores[c] = s;
    }
  }
  for (uint32_t k = 0; k < top_k; k++) {
    uint32_t best = 0;
    float best_score = -1.0e30f;
    for (uint32_t c = 0; c < n; c++)
      if (!allowed[c] && scores[c] > best_score) {
        best = c;
        best_score = scores[c];
      }
    allowed[best] = 1;
  }
}

}  // namespace ds4::model
