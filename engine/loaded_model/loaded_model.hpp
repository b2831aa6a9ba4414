#pragma once
// load_model: a DS4 GGUF opened once as the model and its tokenizer, the one way the daemon, the
// gateway's Ds4Backend, the agent evaluator and ds4ctl's commands load a model. Whatever fails
// (no such file, not a GGUF, a layout or tokenizer the engine cannot use) comes back as one
// ModelLoadError naming the file and the part that failed.
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

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

}  // namespace ds4
