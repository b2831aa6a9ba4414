// The real engine behind the serving layer. See ds4_backend.hpp.
#include "gateway/serving/ds4_backend.hpp"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"

namespace ds4::serving {

class Ds4Sequence final : public EngineSequence {
 public:
  Ds4Sequence(std::shared_ptr<const Model> model, ContextOptions options) : context_(std::move(model), options) {}

  const std::vector<Token>& tokens() const override { return context_.tokens(); }
  size_t capacity() const override { return context_.capacity(); }
  void clear() override { context_.reset(); }
  void append(std::span<const Token> tokens) override {
    if (tokens.size() == 1) context_.decode(tokens[0]);
    else context_.prefill(tokens);
  }
  std::span<const float> logits() const override { return context_.logits(); }
  std::vector<std::vector<float>> verify(std::span<const Token> tokens) override { return context_.verify(tokens); }
  size_t truncate_floor() const override { return context_.truncate_floor(); }
  size_t rollback_room() const override { return context_.rollback_room(); }
  void truncate(size_t n) override { context_.truncate(n); }
  std::vector<uint8_t> snapshot() const override { return context_.snapshot(); }
  void restore(std::span<const uint8_t> state) override { context_.restore(state); }

 private:
  Context context_;
};

Ds4Backend::Ds4Backend(std::shared_ptr<const Model> model, tokenizer::Tokenizer tokenizer, std::string model_id,
                       ContextOptions context_options)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      model_id_(std::move(model_id)),
      context_options_(context_options) {
  if (model_id_.empty()) model_id_ = model_->info().name.empty() ? "ds4" : model_->info().name;
  // The context decides its capacity (metadata context_length, capped). Build the live one now,
  // so its size is known and its memory is allocated before the service reports ready.
  first_sequence_ = std::make_unique<Ds4Sequence>(model_, context_options_);
  context_length_ = first_sequence_->capacity();
  // The GGUF header, metadata and tensor table (everything before the data section) name the
  // architecture, the tokenizer and every tensor's type, shape and offset.
  const auto& file = model_->gguf();
  fingerprint_ = XXH64(file.base(), std::min<uint64_t>(file.data_offset(), file.size()), 0x44533443);
  if (fingerprint_ == 0) fingerprint_ = 1;
}

std::shared_ptr<Ds4Backend> Ds4Backend::load(const std::filesystem::path& path, const LoadOptions& load_options,
                                             ContextOptions context_options, ProgressFn progress,
                                             std::string model_id) {
  LoadedModel loaded = load_model(path, load_options, std::move(progress));
  if (model_id.empty() && loaded.model->info().name.empty()) model_id = path.stem().string();
  return std::make_shared<Ds4Backend>(std::move(loaded.model), std::move(loaded.tokenizer), std::move(model_id),
                                      context_options);
}

Ds4Backend::~Ds4Backend() = default;

std::unique_ptr<EngineSequence> Ds4Backend::new_sequence() {
  if (first_sequence_) return std::move(first_sequence_);
  return std::make_unique<Ds4Sequence>(model_, context_options_);
}

}  // namespace ds4::serving
