// One loader for the model and its tokenizer; see loaded_model.hpp.
#include "engine/loaded_model/loaded_model.hpp"

#include <utility>

#include "engine/cuda/device.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "engine/gguf/gguf_error.hpp"
#include "engine/model/device/device_self_check.hpp"

namespace ds4 {
namespace {

// The reason without the path when the GGUF layer already put this file's path in front of it.
std::string reason_of(const std::exception& e, const std::filesystem::path& path) {
  if (const auto* g = dynamic_cast<const gguf::GgufError*>(&e); g && g->path() == path.string())
    return g->offset() ? "at byte " + std::to_string(*g->offset()) + ": " + g->detail() : g->detail();
  return e.what();
}

}  // namespace

ModelLoadError::ModelLoadError(std::filesystem::path path, std::string part, const std::string& reason)
    : std::runtime_error("cannot load the model " + path.string() + " (" + part + "): " + reason),
      path_(std::move(path)),
      part_(std::move(part)) {}

LoadedModel load_model(const std::filesystem::path& path, const LoadOptions& options, LoadProgress progress) {
  if (!std::filesystem::exists(path)) throw ModelLoadError(path, "weights", "no such file");
  std::shared_ptr<Model> model;
  try {
    model = Model::load(path, options, std::move(progress));
  } catch (const std::exception& e) {
    throw ModelLoadError(path, "weights", reason_of(e, path));
  }
  try {
    tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->gguf());
    return LoadedModel{std::move(model), std::move(tok)};
  } catch (const std::exception& e) {
    throw ModelLoadError(path, "tokenizer", reason_of(e, path));
  }
}

LoadedModel load_model_on(cuda::Backend backend, const std::filesystem::path& path, LoadOptions options,
                          const std::function<void(const std::string&)>& log, LoadProgress progress) {
  const cuda::BackendDecision d = cuda::choose_backend(backend);  // throws for cuda without a device
  if (!d.log_line.empty()) log(d.log_line);
  options.device = ComputeDevice::Cpu;
  if (d.use == cuda::Backend::Cuda && options.arithmetic == Arithmetic::Exact) {
    // The reference engine's order is the CPU's alone (docs/cuda.md §selection).
    if (backend == cuda::Backend::Cuda)
      throw std::invalid_argument("--backend cuda computes the Fast order only: Exact arithmetic runs on the CPU");
    log("backend auto: CPU after all (Exact arithmetic runs on the CPU only)");
    return load_model(path, options, std::move(progress));
  }
  if (d.use != cuda::Backend::Cuda) return load_model(path, options, std::move(progress));
  options.device = ComputeDevice::Cuda;
  std::string failed;
  try {
    LoadedModel loaded = load_model(path, options, progress);
    log("weights on the device: " + loaded.model->info().placement);
    std::string diff, graphs_error;
    try {
      diff = model::device::self_check(*loaded.model);
    } catch (const cuda::DeviceLost&) {
      throw;
    } catch (const std::exception& e) {
      if (!cuda::PassGraph::enabled()) throw;
      graphs_error = e.what();
    }
    if (cuda::PassGraph::enabled() && (!diff.empty() || !graphs_error.empty())) {
      // The short passes ran as CUDA graphs (docs/cuda.md §graphs): a fault of theirs must not
      // cost the device, so the check runs again with every kernel launched by itself.
      const std::string why = graphs_error.empty() ? "logits differ: " + diff : graphs_error;
      cuda::PassGraph::set_enabled(false);
      diff = model::device::self_check(*loaded.model);
      if (diff.empty()) log("CUDA graphs off: the device self-check failed with them (" + why + ") and passed without");
    }
    if (diff.empty()) {
      log("device self-check: " + std::to_string(model::device::kSelfCheckPrefill + 1) +
          " tokens' logits bit-identical to the CPU's");
      return loaded;
    }
    failed = "the device self-check failed, its logits differ from the CPU's: " + diff;
  } catch (const ModelLoadError& e) {
    // A tokenizer the engine cannot use fails on the CPU too; auto falls back from the rest (the
    // placement fails inside Model::load).
    if (backend == cuda::Backend::Cuda || e.part() == "tokenizer") throw;
    failed = e.what();
  } catch (const std::exception& e) {
    if (backend == cuda::Backend::Cuda) throw ModelLoadError(path, "device", e.what());
    failed = e.what();
  }
  if (backend == cuda::Backend::Cuda) throw ModelLoadError(path, "device", failed);
  log("backend auto: CPU after all (" + failed + ")");
  options.device = ComputeDevice::Cpu;
  return load_model(path, options, std::move(progress));
}

}  // namespace ds4
