#pragma once
// The DS4 forward pass over a batch of consecutive tokens, layer-major: every layer runs its
// projections for the whole batch, then streams the tokens one by one through the stateful
// part (RoPE, FP8, raw window, compressors, indexer, attention), then finishes the batch
// (grouped output projection, HC post, MoE). Because every matmul is batch-width invariant and
// the stateful part is strictly sequential, a token's logits do not depend on how the tokens
// were batched: prefill, decode and verify agree bit for bit.
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

struct ForwardScratch {
  std::vector<float> H, H_mid, H_next, flat, mix, x, xn, qr, qrn, q, kv, kvr, ckv, csc, ikv, isc, iq, iw, heads, low,
      low_g, attn_out, ffn_out, pooled, scores;
  std::vector<HcSplit> split;
  std::vector<uint8_t> allowed;
  QuantAct qa;
  MoeScratch moe;
  HeadScratch head;
};

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
