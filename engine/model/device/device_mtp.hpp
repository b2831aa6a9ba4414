#pragma once
// The MTP block on the device (docs/cuda.md §mtp): mtp.cpp's rows step with the device's stages,
// bit for bit the CPU's Fast order. The embedding (stream 0) and each stream of the target's
// final state are normed and projected, added, run through the block (the device attention on the
// block's own raw rows, then the FFN) and collapsed by the block's head into the base's LM head.
// Only the inputs (the target's states, host floats) go up and the last row's state and logits
// come down. Concurrency: one drafter, one host thread, the device's default stream (a short step
// is captured on its own stream and launched as one graph: docs/cuda.md §graphs); the scratch is
// the caller's, one step's alone while it runs.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "engine/model/device/device_attention.hpp"
#include "engine/model/device/device_head.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/mtp.hpp"

namespace ds4::model::device {

// Places an MTP sidecar's weights for the device beside the base's (`base`: the base model's
// device weights): in place or copied as cuda::place_on_device decides for the sidecar's bytes,
// with `reserve` (the base's Model::Impl::device_reserve) still kept for the contexts' state.
// Returns null when they do not fit, with `reason` saying so (the drafter then runs on the CPU).
std::shared_ptr<const DeviceWeights> place_sidecar_weights(const void* data, size_t bytes,
                                                           std::shared_ptr<const DeviceWeights> base, uint64_t reserve,
                                                           std::string& reason);

// The scratch of the block's steps on the device (grown on demand, kept) and their graphs. Lent
// per draft from the MtpModel's pool (MtpModel::Impl::draft_scratch), so the drafters of every
// live sequence hold one between them (docs/memory.md §scratch).
struct DeviceMtpScratch {
  std::vector<RowRun> runs;
  LayerScratch ls;
  AttentionScratch as;
  HeadScratch hs;
  cuda::DeviceBuffer tokens, error, e, en, E, P, pn, Hh, Hin, mid, out, logits, act;
  cuda::PassGraph graph;  // after the buffers: destroyed first, waiting for its last launch
};

class DeviceMtp {
 public:
  // The block's state on the device, sized as `shape` (the drafter's ratio-0 layer state), empty.
  // mi must hold device weights (MtpModel::Impl::device) and outlive this.
  DeviceMtp(const MtpModel::Impl& mi, const LayerState& shape);

  // T rows at positions pos0 ..: tokens[t] with the target's final state P[t] (n_hc x n_embd host
  // floats each) appended to the block's raw rows, in `x`'s buffers. Writes the last row's output
  // state to last_H (hc_dim floats) and, when logits is set, its logits (n_vocab floats). Waits
  // for the device.
  void rows(DeviceMtpScratch& x, const int32_t* tokens, const float* P, int T, uint32_t pos0, float* last_H,
            float* logits);

  // The block's raw rows: counters on the host (a rollback moves n_raw only), rows on the device.
  DeviceLayerState& state() { return layers_[0]; }

 private:
  const MtpModel::Impl& mi_;
  std::vector<DeviceLayerState> layers_;
};

}  // namespace ds4::model::device
