// See tokenizer_backend.hpp.
#include "gateway/upstream/tokenizer_backend.hpp"

#include <stdexcept>

#include "engine/gguf/gguf_reader.hpp"

namespace ds4::upstream {

TokenizerBackend::TokenizerBackend(tokenizer::Tokenizer tokenizer, std::string model_id, size_t context_length)
    : tokenizer_(std::move(tokenizer)), model_id_(std::move(model_id)), context_length_(context_length) {}

tokenizer::Tokenizer TokenizerBackend::load_tokenizer(const std::filesystem::path& gguf) {
  try {
    return tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(gguf.string()));
  } catch (const std::exception& e) {
    throw std::runtime_error("engine.tokenizer " + gguf.string() + ": " + e.what());
  }
}

std::unique_ptr<serving::EngineSequence> TokenizerBackend::new_sequence() {
  throw std::logic_error("gateway mode: the model runs on the upstream engines; there is no local sequence");
}

}  // namespace ds4::upstream
