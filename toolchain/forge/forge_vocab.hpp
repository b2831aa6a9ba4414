#pragma once
// The forge's tokenizer vocabulary: byte-level BPE in the layout of the ds4-tiny model.
//   id 0 <｜begin▁of▁sentence｜> (BOS), id 1 <｜end▁of▁sentence｜> (EOS),
//   ids 2..257 the 256 byte symbols in byte order (GPT-2 byte->unicode map),
//   then one token per learned merge, in rank order,
//   last five <｜User｜> <｜Assistant｜> <think> </think> ｜DSML｜.
// Merges are learned deterministically from an embedded English/code sample (forge_sample_text)
// split into words roughly the way the joyai-llm pre-tokenizer splits text (a space attaches to
// the following word, digits go in runs of at most three), so the result behaves like a real
// small BPE vocabulary on ordinary prompts.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/ds4_metadata.hpp"

namespace ds4::gguf::forge {

// tokens, merges ("left right", rank order), token types (3 for the seven specials, else 1).
using ForgeVocab = Ds4Vocab;

inline constexpr uint32_t kForgeSpecialTokens = 7;
inline constexpr uint32_t kForgeMinVocab = 256 + kForgeSpecialTokens;

// Throws std::invalid_argument if vocab_size < kForgeMinVocab or the sample text cannot supply
// vocab_size - kForgeMinVocab distinct merges.
ForgeVocab build_forge_vocab(uint32_t vocab_size);

// The GPT-2 byte-level symbol for a byte, as UTF-8.
std::string byte_symbol(uint8_t b);
// The embedded training sample.
std::string_view forge_sample_text();

}  // namespace ds4::gguf::forge
