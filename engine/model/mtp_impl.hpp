#pragma once
// MtpModel's insides (mtp.cpp), shared with the MTP block's device twin (device/device_mtp.cpp):
// the sidecar's mapping and bound tensors, the block's spec, and, when the base model runs on the
// CUDA device, the sidecar's weights there (docs/speculation.md §mtp, docs/cuda.md §mtp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/model/mtp.hpp"
#include "engine/model/scratch_pool.hpp"

namespace ds4 {

namespace model::device {
struct DeviceMtpScratch;
}

// What one draft() computes in, beside the drafter's own state: the block's rows on the CPU, or
// their buffers on the device (`dev`, made by the first draft that runs there). Lent per draft
// from the MtpModel's pool, so the drafters of every live sequence hold one between them (a
// drafter's catch-up of 128 rows holds about 199 MiB on DS4 Flash; docs/memory.md §scratch).
struct DraftScratch {
  model::ForwardScratch fs;
  model::HeadScratch head;
  model::QuantAct qa;
  std::vector<float> P, Hin, H_mid, H_out, e, en, E, pn, Hh;
  std::vector<int32_t> toks;
  std::vector<model::RowSlot> slots;
  std::unique_ptr<model::device::DeviceMtpScratch> dev;
  DraftScratch();
  ~DraftScratch();
};

struct MtpModel::Impl {
  gguf::GgufFile file;
  std::shared_ptr<const Model> base;
  model::LayerWeights block;
  model::Tensor e_proj, h_proj, enorm, hnorm, norm, hc_head_fn, hc_head_scale, hc_head_base;
  model::RopeParams rope;
  model::BlockSpec spec;
  model::ModelConfig block_cfg;  // the base's, with one ratio-0 layer
  float clamp = 0.0f;            // the block's SwiGLU clamp (ds4 runs it as layer 1)
  uint64_t bytes = 0;
  // A base on the device: the sidecar's weights there (the base's beside them, for the embedding
  // and the LM head), or null when they did not fit; `placement` says which and why.
  std::shared_ptr<const model::device::DeviceWeights> device;
  std::string placement;
  mutable model::ScratchPool<DraftScratch> draft_scratch{[] { return std::make_unique<DraftScratch>(); }};

  explicit Impl(gguf::GgufFile f) : file(std::move(f)) {}
};

}  // namespace ds4
