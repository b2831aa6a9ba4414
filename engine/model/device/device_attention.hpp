#pragma once
// The attention sublayer on the device for the rows of one or more sequences, as
// engine/model/forward.cpp attention_sublayer orders it on the CPU in Fast mode (bit for bit): HC
// pre, the batched q-LoRA, KV, compressor and indexer projections, then token by token RoPE, the
// raw row into the ring, the compressors (ratio 4 and 128) and the indexer (ratio 4), sink
// attention over the visible rows, inverse RoPE; the grouped output projection and HC post.
#include <cstdint>
#include <span>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "engine/model/weights.hpp"

namespace ds4::model::device {

struct AttentionScratch {
  cuda::DeviceBuffer qr, qrn, q, kvr, kv, ckv, csc, ikv, isc, iq, iw, heads, low, attn_out, act;
  cuda::DeviceBuffer pooled, cs, ccs, slot, cslot, visible, count, scores, mask, idx_scores, hq;
};

// One sequence's rows in a pass: the next `n` rows (runs follow each other in pass order), its
// positions pos0 .. pos0 + n - 1, appended to `st` (this layer's state of that sequence).
struct RowRun {
  DeviceLayerState* st = nullptr;
  uint32_t pos0 = 0;
  int n = 0;
};

// The T rows of `runs` (their n add up to T; all states of this layer) through one layer's
// attention: H (T x hc_dim) to H_out (not H). The projections run over all rows at once, the
// stateful part row by row on each row's own state, so a row's result does not depend on the
// rows beside it. Synchronises once per row of a ratio-4 layer with more indexer rows than top_k
// (the count of visible rows). Throws std::length_error past a state's capacity,
// std::invalid_argument on bad shapes.
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
