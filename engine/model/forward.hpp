#pragma once
// The DS4 forward pass over a batch of rows, layer-major: every layer runs its projections for
// the whole batch, then streams the rows one by one through the stateful part (RoPE, FP8, raw
// window, compressors, indexer, attention) of each row's own sequence, then finishes the batch
// (grouped output projection, HC post, MoE). Because every matmul is batch-width invariant and
// the stateful part is strictly sequential per sequence, a token's logits do not depend on how
// the tokens were batched, nor with which other sequences' rows: prefill, decode, verify and a
// batched step over several contexts (batch_step.hpp) agree bit for bit.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model/hyper_connection.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model.hpp"
#include "engine/model/moe.hpp"
#include "engine/model/output_head.hpp"

namespace ds4::model {

// One row of a forward pass: the sequence state it reads and appends to, and its position there.
struct RowSlot {
  std::vector<LayerState>* layers = nullptr;
  uint32_t pos = 0;
};

struct ForwardScratch {
  std::vector<float> H, H_mid, H_next, H_sel, flat, mix, x, xn, qr, qrn, q, kv, kvr, ckv, csc, ikv, isc, iq, iw, heads,
      low, low_g, attn_out, ffn_out, pooled, scores;
  std::vector<HcSplit> split;
  std::vector<uint8_t> allowed;
  std::vector<RowSlot> slots;
  std::vector<int> logit_rows;
  QuantAct qa;
  MoeScratch moe;
  HeadScratch head;
};

// Runs T rows, row t being tokens[t] appended to *rows[t].layers at position rows[t].pos. Rows
// may belong to different sequences (docs/batching.md §rows); a sequence's rows must be
// consecutive positions in increasing order, starting at its current length. Logits are
// computed for rows logit_rows[0..n_logit_rows) only, into n_logit_rows x n_vocab.
void forward_rows(const Model::Impl& m, const RowSlot* rows, const int32_t* tokens, int T, const int* logit_rows,
                  int n_logit_rows, float* logits, ForwardScratch& s,
                  const std::function<void(uint32_t)>& on_layer = {});

// Runs tokens[0..T) at positions pos0 .. pos0+T-1, appending to `layers`. If all_logits,
// logits receives T x n_vocab values, else only the last token's n_vocab. `on_layer(il)` is
// called after each layer.
void forward_batch(const Model::Impl& m, std::vector<LayerState>& layers, const int32_t* tokens, int T, uint32_t pos0,
                   bool all_logits, float* logits, ForwardScratch& s,
                   const std::function<void(uint32_t)>& on_layer = {});

// Fresh per-layer state for a context of `capacity` tokens that can roll back up to
// `rollback` tokens.
std::vector<LayerState> make_layer_states(const ModelConfig& cfg, uint32_t capacity, uint32_t rollback);

// Rolls the per-layer state back from `size` to `n` tokens (size - n <= rollback). Throws
// std::out_of_range, leaving the state untouched, when the history does not reach back.
void truncate_layer_states(const Model::Impl& m, std::vector<LayerState>& layers, uint64_t size, uint64_t n);

}  // namespace ds4::model
