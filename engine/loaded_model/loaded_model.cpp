// One loader for the model and its tokenizer; see loaded_model.hpp.
#include "engine/loaded_model/loaded_model.hpp"

#include <utility>

#include "engine/gguf/gguf_error.hpp"

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

}  // namespace ds4
