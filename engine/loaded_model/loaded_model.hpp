#pragma once
// load_model: a DS4 GGUF opened once as the model and its tokenizer, the one way the daemon, the
// gateway's Ds4Backend, the agent evaluator and ds4ctl's commands load a model. Whatever fails
// (no such file, not a GGUF, a layout or tokenizer the engine cannot use) comes back as one
// ModelLoadError naming the file and the part that failed.
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "engine/cuda/backend_choice.hpp"
#include "engine/model/model.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace ds4 {

struct LoadedModel {
  std::shared_ptr<Model> model;
  tokenizer::Tokenizer tokenizer;
};

class ModelLoadError : public std::runtime_error {
 public:
  // what() reads "cannot load the model <path> (<part>): <reason>"; part is "weights" or
  // "tokenizer".
  ModelLoadError(std::filesystem::path path, std::string part, const std::string& reason);
  const std::filesystem::path& path() const noexcept { return path_; }
  const std::string& part() const noexcept { return part_; }

 private:
  std::filesystem::path path_;
  std::string part_;
};

// Maps and binds the weights (Model::load, `progress` as there), then reads the tokenizer from
// the same file's metadata. Throws ModelLoadError.
LoadedModel load_model(const std::filesystem::path& path, const LoadOptions& options = {}, LoadProgress progress = {});

// load_model on the device engine.backend names (engine/cuda/backend_choice.hpp; options.device
// is set here). For the GPU: the weights placed, then the device's logits checked bit for bit
// against the CPU's (model/device/device_self_check.hpp). `cuda` throws naming what failed (no
// usable device: std::runtime_error; placement or self-check: ModelLoadError, part "device");
// `auto` falls back to the CPU on any of those. `log` receives the lines saying which device runs
// the model and why (one to three: the choice, the placement, the check).
LoadedModel load_model_on(cuda::Backend backend, const std::filesystem::path& path, LoadOptions options,
                          const std::function<void(const std::string&)>& log, LoadProgress progress = {});

}  // namespace ds4
