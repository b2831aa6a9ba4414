#pragma once
// The DS4 forward pass over a batch of rows, layer-major: every layer runs its projections for
// the whole batch, then streams the rows one by one through the stateful part (RoPE, FP8, raw
// window, compressors, indexer, attention) of each row's own sequence, then finishes the batch
// (grouped output projection, HC post, MoE). Because every matmul is batch-width invariant and
// the stateful part is strictly sequential per sequence, a token's logits do not depend on how
// the tokens were batched, nor with which other sequences' rows: prefill, decode, verify and a
// batched step over several contexts (batch_step.hpp) agree bit for bit.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model/hyper_connection.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model.hpp"
#include "engine/model/moe.hpp"
#include "engine/model/output_head.hpp"
#include "engine/model/rope.hpp"

namespace ds4::model {

// One row of a forward pass: the sequence state it reads and appends to, and its position there.
struct RowSlot {
  std::vector<LayerState>* layers = nullptr;
  uint32_t pos = 0;
  float* hidden = nullptr;  // if set, receives the row's final HC state (hc_dim floats)
};

// One transformer block: its weights and per-layer constants, and which entry of a row's
// `layers` holds its state. The MTP block (mtp.hpp) is a block of this kind outside the model's
// layer list.
struct BlockSpec {
  const LayerWeights* w = nullptr;
  const RopeParams* rope = nullptr;
  uint32_t ratio = 0;
  uint32_t state = 0;
  bool hash = false;  // routed by token id (tid2eid)
  float clamp = 0;    // SwiGLU clamp
};
BlockSpec block_spec(const Model::Impl& m, uint32_t il);

// The initial HC state of T tokens: each embedding row copied into every stream. Throws
// std::out_of_range for a token outside the vocabulary.
// Throws std::out_of_range naming the first of the T ids outside [0, n_vocab).
void check_token_ids(const ModelConfig& cfg, const int32_t* tokens, int T);
void embed_rows(const Model::Impl& m, const int32_t* tokens, int T, float* H);

// Final HC states of a sequence's recent positions (ContextOptions::keep_hidden), a ring tagged
// by position: what an MTP drafter reads (mtp.hpp).
struct HiddenRing {
  uint32_t dim = 0, slots = 0;
  std::vector<float> data;
  std::vector<int64_t> tag;

  void init(uint32_t dim_, uint32_t slots_) {
    dim = dim_;
    slots = slots_;
    data.assign(size_t(dim) * slots, 0.0f);
    tag.assign(slots, -1);
  }
  float* slot(uint64_t pos) { return slots ? data.data() + (pos % slots) * dim : nullptr; }
  void mark(uint64_t pos) {
    if (slots) tag[pos % slots] = int64_t(pos);
  }
  const float* find(uint64_t pos) const {
    return slots && tag[pos % slots] == int64_t(pos) ? data.data() + (pos % slots) * dim : nullptr;
  }
  void clear() { std::fill(tag.begin(), tag.end(), -1); }
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

// Runs one block over T rows: H (T x hc_dim) in, H_out out, H_mid scratch of the same size.
void block_forward(const Model::Impl& m, const BlockSpec& b, const RowSlot* rows, const int32_t* tokens, const float* H,
                   int T, float* H_mid, float* H_out, ForwardScratch& s);

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
// `hidden`, if given, receives every row's final HC state.
void forward_batch(const Model::Impl& m, std::vector<LayerState>& layers, const int32_t* tokens, int T, uint32_t pos0,
                   bool all_logits, float* logits, ForwardScratch& s,
                   const std::function<void(uint32_t)>& on_layer = {}, HiddenRing* hidden = nullptr);

// Fresh per-layer state for a context of `capacity` tokens that can roll back up to
// `rollback` tokens.
std::vector<LayerState> make_layer_states(const ModelConfig& cfg, uint32_t capacity, uint32_t rollback);

// Rolls the per-layer state back from `size` to `n` tokens (size - n <= rollback). Throws
// std::out_of_range, leaving the state untouched, when the history does not reach back.
void truncate_layer_states(const Model::Impl& m, std::vector<LayerState>& layers, uint64_t size, uint64_t n);

}  // namespace ds4::model
