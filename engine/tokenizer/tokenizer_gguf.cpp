// Building a Tokenizer from GGUF metadata (tokenizer.ggml.*), kept apart from the algorithm so the
// tokenizer itself does not depend on the file format.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace ds4::tokenizer {
namespace {

std::optional<int32_t> optional_id(const gguf::GgufFile& file, std::string_view key) {
  if (!file.has(key)) return std::nullopt;
  return file.get<int32_t>(key);
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  const std::string model = file.get_or<std::string>("tokenizer.ggml.model", "gpt2");
  if (model != "gpt2")
    throw gguf::GgufError(file.path(), std::nullopt,
                          fmt::format("tokenizer.ggml.model is \"{}\"; only byte-level BPE "
                                      "(\"gpt2\") is supported",
                                      model));
  const std::string pre = file.get_or<std::string>("tokenizer.ggml.pre", "joyai-llm");
  if (pre != "joyai-llm")
    spdlog::warn("{}: tokenizer.ggml.pre is \"{}\"; splitting with the joyai-llm rules anyway", file.path(), pre);

  Vocabulary vocab;
  vocab.tokens = file.get_array<std::string>("tokenizer.ggml.tokens");
  vocab.merges = file.get_array<std::string>("tokenizer.ggml.merges");
  vocab.bos_id = optional_id(file, "tokenizer.ggml.bos_token_id");
  vocab.eos_id = optional_id(file, "tokenizer.ggml.eos_token_id");
  try {
    return Tokenizer(std::move(vocab));
  } catch (const std::invalid_argument& e) {
    throw gguf::GgufError(file.path(), std::nullopt, e.what());
  }
}

}  // namespace ds4::tokenizer
