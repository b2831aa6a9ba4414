#pragma once
// The attention sublayer on the device for the rows of one or more sequences, as
// engine/model/forward.cpp attention_sublayer orders it on the CPU in Fast mode (bit for bit): HC
// pre, the batched q-LoRA, KV, compressor and indexer projections, then for all rows at once
// RoPE, the raw rows, the compressors (ratio 4 and 128), the indexer's choice (ratio 4, row by
// row), sink attention over each row's visible rows, inverse RoPE (docs/cuda.md §attention-rows);
// the grouped output projection and HC post.
#include <cstdint>
#include <span>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "engine/model/weights.hpp"
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::model::device {

struct AttentionScratch {
  cuda::DeviceBuffer qr, qrn, q, kvr, kv, ckv, csc, ikv, isc, iq, iw, heads, low, attn_out, act;
  cuda::DeviceBuffer pooled, raw_pass, pass_table, row_table, scores, mask, idx_scores, hq;
  // Visible rows per attention launch at most (a row with more goes alone): the scores' budget
  // the plan counts (docs/cuda.md §attention-rows); tests lower it.
  uint64_t group_slots = planner::kAttentionGroupSlots;
};

// One sequence's rows in a pass: the next `n` rows (runs follow each other in pass order), its
// positions pos0 .. pos0 + n - 1, appended to `st` (this layer's state of that sequence).
struct RowRun {
  DeviceLayerState* st = nullptr;
  uint32_t pos0 = 0;
  int n = 0;
};

// The T rows of `runs` (their n add up to T; all states of this layer) through one layer's
// attention: H (T x hc_dim) to H_out (not H). Every row sees its own sequence's state as the
// CPU's row loop leaves it, so a row's result does not depend on the rows beside it. Never waits
// for the device (the indexer's counts stay there). Throws std::length_error past a state's
// capacity, std::invalid_argument on bad shapes.
void attention_sublayer(const DeviceWeights& dw, const ModelConfig& cfg, const LayerWeights& lw, const RopeParams& rope,
                        std::span<const RowRun> runs, cuda::DeviceSpan H, int T, cuda::DeviceSpan H_out,
                        LayerScratch& ls, AttentionScratch& s);

// T consecutive tokens of one sequence from position pos0.
inline void attention_sublayer(const DeviceWeights& dw, const ModelConfig& cfg, const LayerWeights& lw,
                               const RopeParams& rope, DeviceLayerState& st, uint32_t pos0, cuda::DeviceSpan H, int T,
                               cuda::DeviceSpan H_out, LayerScratch& ls, AttentionScratch& s) {
  const RowRun run{&st, pos0, T};
  attention_sublayer(dw, cfg, lw, rope, std::span<const RowRun>(&run, 1), H, T, H_out, ls, s);
}

}  // namespace ds4::model::device
