#pragma once
// Ds4Backend: EngineBackend on the real engine (ds4::Model + ds4::Context + the DS4 tokenizer).
//
// The model is shared and immutable; the one live sequence is a ds4::Context the engine worker
// owns. Tokenization is thread-safe (the Tokenizer is immutable), so HTTP threads encode prompts
// while the worker decodes.
#include <filesystem>
#include <memory>
#include <string>

#include "engine/model/batch_step.hpp"
#include "engine/model/model.hpp"
#include "engine/model/mtp.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/serving/engine_backend.hpp"

namespace ds4::serving {

class Ds4Backend final : public EngineBackend {
 public:
  // `model_id`: the name clients see; empty: the GGUF's general.name, else the file stem.
  ~Ds4Backend() override;
  Ds4Backend(std::shared_ptr<const Model> model, tokenizer::Tokenizer tokenizer, std::string model_id,
             ContextOptions context_options = {});

  // Loads the model and its tokenizer (ds4::load_model: throws ModelLoadError); progress as in
  // Model::load.
  static std::shared_ptr<Ds4Backend> load(const std::filesystem::path& path, const LoadOptions& load_options,
                                          ContextOptions context_options = {}, ProgressFn progress = {},
                                          std::string model_id = {});

  std::string model_id() const override { return model_id_; }
  size_t context_length() const override { return context_length_; }
  size_t vocab_size() const override { return tokenizer_.vocab_size(); }
  std::vector<Token> encode(std::string_view text) const override { return tokenizer_.encode(text); }
  std::vector<Token> encode_plain(std::string_view text) const override { return tokenizer_.encode_raw(text); }
  std::vector<Token> encode_prompt(std::string_view text,
                                   std::span<const std::pair<size_t, size_t>> plain) const override {
    return tokenizer_.encode_with_plain(text, plain);
  }
  std::string decode(std::span<const Token> tokens) const override { return tokenizer_.decode(tokens); }
  std::string token_bytes(Token token) const override { return tokenizer_.token_bytes(token); }
  bool is_end_of_generation(Token token) const override { return token == tokenizer_.eos(); }
  // XXH64 of the GGUF up to its data section (header, metadata, tensor table).
  uint64_t fingerprint() const override { return fingerprint_; }
  std::unique_ptr<EngineSequence> new_sequence() override;
  // Gives every sequence made from now on the MTP block as its draft head (model_draft; null:
  // none), and makes their contexts keep the final states it reads. Call before the first
  // new_sequence(). Throws std::invalid_argument for another model's block.
  void set_drafter_model(std::shared_ptr<const MtpModel> mtp);
  // Several entries run as one ds4::BatchStep; one runs on its own context (the solo path).
  void step(std::span<StepEntry> entries) override;

  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  const std::shared_ptr<const Model>& model() const { return model_; }

 private:
  std::shared_ptr<const Model> model_;
  tokenizer::Tokenizer tokenizer_;
  std::string model_id_;
  ContextOptions context_options_;
  size_t context_length_ = 0;
  uint64_t fingerprint_ = 0;
  std::unique_ptr<EngineSequence> first_sequence_;  // handed to the worker by new_sequence()
  std::unique_ptr<BatchStep> batch_step_;           // made by the first step of several entries
  std::shared_ptr<const MtpModel> mtp_;             // draft head of new sequences (may be null)
};

}  // namespace ds4::serving
