#pragma once
// TokenizerBackend: the EngineBackend of gateway mode, a tokenizer and no model. It renders and
// counts tokens like Ds4Backend (the same Tokenizer from a GGUF's metadata); the model id and
// context length are the upstream's (GET /engine/info). It has no sequence: in gateway mode the
// Service hands jobs to the upstream pool (ServiceConfig::remote) and never starts a worker.
#include <filesystem>
#include <memory>
#include <string>

#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/serving/engine_backend.hpp"

namespace ds4::upstream {

class TokenizerBackend final : public serving::EngineBackend {
 public:
  TokenizerBackend(tokenizer::Tokenizer tokenizer, std::string model_id, size_t context_length);
  // The tokenizer of a DS4 GGUF (only its metadata is read); throws with the path and reason.
  static tokenizer::Tokenizer load_tokenizer(const std::filesystem::path& gguf);
  // The upstream's model id and context length, once known (before the backend is shared).
  void describe(std::string model_id, size_t context_length) {
    model_id_ = std::move(model_id);
    context_length_ = context_length;
  }

  std::string model_id() const override { return model_id_; }
  size_t context_length() const override { return context_length_; }
  size_t vocab_size() const override { return tokenizer_.vocab_size(); }
  std::vector<serving::Token> encode(std::string_view text) const override { return tokenizer_.encode(text); }
  std::vector<serving::Token> encode_plain(std::string_view text) const override { return tokenizer_.encode_raw(text); }
  std::vector<serving::Token> encode_prompt(std::string_view text,
                                            std::span<const std::pair<size_t, size_t>> plain) const override {
    return tokenizer_.encode_with_plain(text, plain);
  }
  std::string decode(std::span<const serving::Token> tokens) const override { return tokenizer_.decode(tokens); }
  std::string token_bytes(serving::Token token) const override { return tokenizer_.token_bytes(token); }
  bool is_end_of_generation(serving::Token token) const override { return token == tokenizer_.eos(); }
  // Throws: gateway mode runs no sequence here.
  std::unique_ptr<serving::EngineSequence> new_sequence() override;

 private:
  tokenizer::Tokenizer tokenizer_;
  std::string model_id_;
  size_t context_length_;
};

}  // namespace ds4::upstream
