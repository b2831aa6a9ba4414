// Indexer scoring and top-k selection; see indexer.hpp. The selection is ds4's: top_k passes,
// each taking the highest-scoring row not yet taken (strict >, so the lowest index wins ties).
#include "engine/model/indexer.hpp"

#include "engine/model/numerics.hpp"

namespace ds4::model {

void indexer_select(const float* q, const float* w, uint32_t n_head, const RowStore& rows, uint32_t top_k,
                    bool exact, std::vector<uint8_t>& allowed, std::vector<float>& scores) {
  const uint32_t n = rows.n, dim = rows.dim;
  allowed.assign(n, 0);
  if (top_k >= n) {
    allowed.assign(n, 1);
    return;
  }
  scores.resize(n);
  for (uint32_t c = 0; c < n; c++) {
    const float* kv = rows.row(c);
    float s = 0.0f;
    for (uint32_t h = 0; h < n_head; h++) {
      float d = exact ? dot_f32_exact(kv, q + uint64_t(h) * dim, dim) : dot_f32_fast(kv, q + uint64_t(h) * dim, dim);
      if (d < 0.0f) d = 0.0f;
      s += d * w[h];
    }
    scores[c] = s;
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
