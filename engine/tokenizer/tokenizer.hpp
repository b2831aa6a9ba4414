#pragma once
// The DeepSeek V4 Flash tokenizer: byte-level BPE with the joyai-llm pre-tokenizer and seven
// literal special tokens.
//
// encode() cuts out the special strings, splits the rest into pieces (joyai_pretokenizer.hpp) and
// merges each by BPE rank (bpe_merger.hpp); encode_raw() skips the special matching; decode() is
// the exact inverse of encode() (a UTF-8 character may be split across tokens). The vocabulary
// comes from GGUF metadata; the class is immutable after construction and safe to use from
// several threads at once. Details: docs/engine.md §tokenizer.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::gguf {
class GgufFile;
}

namespace ds4::tokenizer {

class BpeMerger;

// What a tokenizer is built from; from_gguf() fills it from the file's metadata.
struct Vocabulary {
  std::vector<std::string> tokens;  // byte-level strings by id
  std::vector<std::string> merges;  // "left right", rank order
  // Fallback ids (tokenizer.ggml.bos_token_id / eos_token_id) used only when the BOS/EOS strings
  // are not in the vocabulary.
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
};

class Tokenizer {
 public:
  // The seven strings encode() matches literally, in matching priority order.
  static constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
  static constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
  static constexpr std::string_view kUser = "<｜User｜>";
  static constexpr std::string_view kAssistant = "<｜Assistant｜>";
  static constexpr std::string_view kThinkStart = "<think>";
  static constexpr std::string_view kThinkEnd = "</think>";
  static constexpr std::string_view kDsml = "｜DSML｜";

  // Throws std::invalid_argument naming what is missing (no tokens, no BOS/EOS).
  explicit Tokenizer(Vocabulary vocab);
  // Reads tokenizer.ggml.tokens, tokenizer.ggml.merges and the BOS/EOS ids; throws the reader's
  // error (with file and key) when they are missing or mistyped.
  static Tokenizer from_gguf(const gguf::GgufFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Special strings become their ids (those present in the vocabulary); the rest is BPE.
  std::vector<int32_t> encode(std::string_view text) const;
  // BPE only: special strings are tokenized as the text they are.
  std::vector<int32_t> encode_raw(std::string_view text) const;
  // A rendered prompt whose byte ranges `plain` (sorted, disjoint [begin, end) of `text`) are
  // client text: a special string becomes its id only where it lies wholly outside them, so no
  // control token ever comes from those bytes. Ordinary text is split and merged across the
  // range edges exactly as encode() does, so when the ranges hold no special string the result
  // is encode(text). Throws std::invalid_argument for unsorted, overlapping or out-of-range spans.
  std::vector<int32_t> encode_with_plain(std::string_view text, std::span<const std::pair<size_t, size_t>> plain) const;
  // Appending forms, for building a prompt piece by piece without copies.
  void append_encoded(std::string_view text, std::vector<int32_t>& out) const;
  void append_encoded_raw(std::string_view text, std::vector<int32_t>& out) const;

  // Throws std::out_of_range for an id outside [0, vocab_size()).
  std::string decode(std::span<const int32_t> ids) const;
  const std::string& token_bytes(int32_t id) const;
  // The vocabulary string as stored in the GGUF (byte-level alphabet).
  const std::string& token_string(int32_t id) const;

  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  // The id of one of the seven special strings, if the vocabulary has it.
  std::optional<int32_t> special(std::string_view literal) const;
  // Whether `id` is one of the control tokens (its text contains U+FF5C) or a special above.
  bool is_control(int32_t id) const;
  size_t vocab_size() const { return token_strings_.size(); }

 private:
  struct Special {
    std::string_view text;
    int32_t id;
  };
  // The special string starting at text[pos], if any.
  const Special* special_at(std::string_view text, size_t pos) const;
  void check_id(int32_t id) const;

  std::vector<std::string> token_strings_;
  std::vector<std::string> token_bytes_;
  std::vector<bool> control_;
  std::vector<Special> specials_;
  std::unique_ptr<BpeMerger> merger_;
  int32_t bos_ = -1;
  int32_t eos_ = -1;
};

}  // namespace ds4::tokenizer
