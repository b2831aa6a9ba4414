#pragma once
// The lightning indexer of ratio-4 layers: when a layer holds more compressed rows than
// top_k, each query token scores every indexer row with
//   score[c] = sum_h w[h] * max(0, <index_comp[c], q_h>)
// (q_h: indexer heads projected from the q latent, RoPE'd and Hadamard+FP4 simulated; w: the
// per-head weights projected from the normed input, scaled by 1/sqrt(dim * heads)) and only the
// top_k rows stay visible to attention. Ties go to the lower row index.
#include <cstdint>
#include <vector>

#include "engine/model/kv_state.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::model {

// Fills allowed[0..n) (n = rows.n) with 1 for the selected rows. q: n_head x dim (ready),
// w: n_head (already scaled). `scores` is scratch. exact: ds4's serial dots; otherwise the Fast
// float dots of `isa` (docs/arithmetic.md §indexer). Heads are summed in index order in both.
void indexer_select(const float* q, const float* w, uint32_t n_head, const RowStore& rows, uint32_t top_k, bool exact,
                    quant::Isa isa, std::vector<uint8_t>& allowed, std::vector<float>& scores);

}  // namespace ds4::model
