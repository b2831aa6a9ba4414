#pragma once
// Model::Impl: what a loaded model owns (the mapped GGUF, the metadata-derived configuration,
// the bound weight table, the thread pool) plus the execution policy derived from the load
// options. Internal to engine/model.
#include <memory>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "engine/model/weights.hpp"

namespace ds4 {

struct Model::Impl {
  gguf::GgufFile file;
  model::ModelConfig cfg;
  model::Weights w;
  ModelInfo info;
  std::unique_ptr<kernels::ThreadPool> pool;
  model::Exec ex;
  std::vector<model::RopeParams> rope;  // per layer
  uint64_t fingerprint = 0;             // identifies config + weights layout (snapshots)

  explicit Impl(gguf::GgufFile f) : file(std::move(f)) {}
};

namespace model {
// Reads and validates metadata into a config (model_loader.cpp).
ModelConfig read_config(const gguf::GgufFile& file);
// Binds and validates every tensor (model_loader.cpp).
Weights bind_weights(const gguf::GgufFile& file, const ModelConfig& cfg);
}  // namespace model

}  // namespace ds4
