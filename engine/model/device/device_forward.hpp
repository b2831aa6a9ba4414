#pragma once
// The DS4 forward of one context on the CUDA device (docs/cuda.md §forward), the device twin of
// model::forward_batch in Fast mode: embedding, every block (attention with the context's
// device KV state, then the FFN), the output head, with the same bits as the CPU. The weights are
// read in place or copied per the placement; the KV state lives on the device and copies to and
// from the CPU's layout, so a context can move between the backends at any token.
//
// Concurrency: one context, one host thread, the device's default stream.
#include <cstdint>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_attention.hpp"
#include "engine/model/device/device_head.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model.hpp"

namespace ds4::model::device {

class DeviceForward {
 public:
  // m must be loaded in Fast arithmetic (the device has no Exact order) and outlive this; `shapes`
  // are the context's CPU layer states (their capacities). Throws std::invalid_argument for an
  // Exact model or DoesNotFit, std::runtime_error from the driver.
  DeviceForward(const Model::Impl& m, const std::vector<LayerState>& shapes, cuda::WeightPlacement placement);

  // Tokens at positions pos0 .. pos0 + T - 1: logits (n_vocab floats per row) of every row when
  // all_logits, else of the last. Ids are checked on the host first (std::out_of_range naming
  // the id, the state untouched).
  void forward(const int32_t* tokens, int T, uint32_t pos0, bool all_logits, float* logits);

  void upload_state(const std::vector<LayerState>& from);
  void download_state(std::vector<LayerState>& to) const;

 private:
  const Model::Impl& m_;
  DeviceWeights dw_;
  std::vector<DeviceLayerState> layers_;
  LayerScratch ls_;
  AttentionScratch as_;
  HeadScratch hs_;
  cuda::DeviceBuffer tokens_, H_, H_mid_, H_next_, error_, logits_;
};

}  // namespace ds4::model::device
