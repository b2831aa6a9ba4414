#pragma once
// Model::Impl: what a loaded model owns (the mapped GGUF, the metadata-derived configuration,
// the bound weight table, the thread pool) plus the execution policy derived from the load
// options. Internal to engine/model.
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "engine/model/scratch_pool.hpp"
#include "engine/model/weights.hpp"

namespace ds4 {
namespace model::device {
class DeviceWeights;  // device/device_weights.hpp
class DevicePass;     // device/device_forward.hpp
}  // namespace model::device

struct Model::Impl {
  gguf::GgufFile file;
  model::ModelConfig cfg;
  model::Weights w;
  ModelInfo info;
  std::unique_ptr<kernels::ThreadPool> pool;
  model::Exec ex;
  std::vector<model::RopeParams> rope;  // per layer
  uint64_t fingerprint = 0;             // identifies config + weights layout (snapshots)
  // LoadOptions::device Cuda: the weights as the device reads them; every Context runs there.
  std::shared_ptr<const model::device::DeviceWeights> device;
  uint64_t device_reserve = 0;  // LoadOptions::device_reserve_bytes: the contexts' device state
  // The passes' scratch, lent per pass to every context of the model (scratch_pool.hpp): the
  // CPU's, and the device's next to `device`.
  mutable model::ScratchPool<model::ForwardScratch> cpu_scratch{
      [] { return std::make_unique<model::ForwardScratch>(); }};
  std::shared_ptr<model::ScratchPool<model::device::DevicePass>> device_scratch;

  explicit Impl(gguf::GgufFile f) : file(std::move(f)) {}
};

namespace model {
// Reads and validates metadata into a config (model_loader.cpp).
ModelConfig read_config(const gguf::GgufFile& file);
// Binds and validates every tensor (model_loader.cpp).
Weights bind_weights(const gguf::GgufFile& file, const ModelConfig& cfg);
// One block's tensors named `prefix` + the layer names ("blk.3.", "mtp.0."), for a layer of
// compress ratio `ratio`, hash-routed or not, exp_probs_b required or optional.
LayerWeights bind_layer(const gguf::GgufFile& file, const ModelConfig& cfg, const std::string& prefix, uint32_t ratio,
                        bool hash, bool bias_required);
// One tensor by name, checked against the allowed types and the shape; throws naming the file
// and tensor. A missing tensor that is not required gives an absent Tensor.
Tensor bind_tensor(const gguf::GgufFile& file, const std::string& name, std::initializer_list<quant::Type> types,
                   std::vector<uint64_t> dims, bool required = true);
}  // namespace model

}  // namespace ds4
