// Byte-level BPE training for the forge vocabulary; see forge_vocab.hpp.
#include "toolchain/forge/forge_vocab.hpp"

#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace ds4::gguf::forge {
namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool is_letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits the sample into words: [space]letters, digits (<= 3), [space]punctuation, whitespace.
std::map<std::string, uint64_t> split_words(std::string_view text) {
  std::map<std::string, uint64_t> words;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    auto c = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    if (c(i) == ' ' && i + 1 < text.size() && !is_space(c(i + 1)) && !is_digit(c(i + 1))) ++i;  // leading space
    if (is_letter(c(i))) {
      while (i < text.size() && is_letter(c(i))) ++i;
    } else if (is_digit(c(i))) {
      size_t n = 0;
      while (i < text.size() && is_digit(c(i)) && n < 3) ++i, ++n;
    } else if (is_space(c(i))) {
      // A run of whitespace; its last space belongs to the next word when one follows.
      while (i < text.size() && is_space(c(i))) ++i;
      if (i < text.size() && i - start > 1 && text[i - 1] == ' ' && !is_digit(c(i))) --i;
    } else {
      while (i < text.size() && !is_letter(c(i)) && !is_digit(c(i)) && !is_space(c(i))) ++i;
    }
    words[std::string(text.substr(start, i - start))]++;
  }
  return words;
}

}  // namespace

std::string byte_symbol(uint8_t b) {
  // GPT-2: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in byte order.
  auto self = [](uint32_t x) { return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE); };
  if (self(b)) return utf8(b);
  uint32_t n = 0;
  for (uint32_t x = 0; x < b; ++x)
    if (!self(x)) ++n;
  return utf8(0x100 + n);
}

ForgeVocab build_forge_vocab(uint32_t vocab_size) {
  if (vocab_size < kForgeMinVocab)
    throw std::invalid_argument("vocabulary size " + std::to_string(vocab_size) + " is below the minimum " +
                                std::to_string(kForgeMinVocab));
  const uint32_t n_merges = vocab_size - kForgeMinVocab;
  ForgeVocab v;
  v.tokens = {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"};
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_symbol(static_cast<uint8_t>(b)));

  // Words as sequences of token ids (byte symbol of byte b is id 2 + b).
  struct Word {
    std::vector<int> ids;
    uint64_t count;
  };
  std::vector<Word> words;
  for (const auto& [text, count] : split_words(forge_sample_text())) {
    Word w{{}, count};
    for (unsigned char ch : text) w.ids.push_back(2 + ch);
    if (w.ids.size() > 1) words.push_back(std::move(w));
  }
  std::unordered_map<std::string, int> known;
  for (size_t i = 0; i < v.tokens.size(); ++i) known.emplace(v.tokens[i], static_cast<int>(i));
  const char* const specials[] = {"<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "｜DSML｜"};
  for (const char* s : specials) known.emplace(s, -1);  // a merge must never spell a special

  while (v.merges.size() < n_merges) {
    std::unordered_map<uint64_t, uint64_t> pair_counts;
    for (const Word& w : words)
      for (size_t i = 0; i + 1 < w.ids.size(); ++i)
        pair_counts[(uint64_t(w.ids[i]) << 32) | uint32_t(w.ids[i + 1])] += w.count;
    // Best pair: highest count, then the smaller (left, right) strings; never one whose merged
    // string is already a token.
    bool found = false;
    uint64_t best = 0, best_count = 0;
    for (const auto& [key, count] : pair_counts) {
      const std::string& l = v.tokens[key >> 32];
      const std::string& r = v.tokens[key & 0xffffffffu];
      if (known.count(l + r)) continue;
      if (!found || count > best_count ||
          (count == best_count && std::tie(l, r) < std::tie(v.tokens[best >> 32], v.tokens[best & 0xffffffffu]))) {
        found = true;
        best = key;
        best_count = count;
      }
    }
    if (!found)
      throw std::invalid_argument("the forge sample text supplies only " + std::to_string(v.merges.size()) +
                                  " merges; vocabulary size " + std::to_string(vocab_size) + " needs " +
                                  std::to_string(n_merges));
    const int left = static_cast<int>(best >> 32), right = static_cast<int>(best & 0xffffffffu);
    const int merged = static_cast<int>(v.tokens.size());
    v.merges.push_back(v.tokens[left] + " " + v.tokens[right]);
    v.tokens.push_back(v.tokens[left] + v.tokens[right]);
    known.emplace(v.tokens.back(), merged);
    for (Word& w : words) {
      std::vector<int> out;
      out.reserve(w.ids.size());
      for (size_t i = 0; i < w.ids.size(); ++i) {
        if (i + 1 < w.ids.size() && w.ids[i] == left && w.ids[i + 1] == right) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(w.ids[i]);
        }
      }
      w.ids = std::move(out);
    }
  }
  for (const char* s : specials) v.tokens.push_back(s);
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types[0] = v.token_types[1] = 3;
  for (size_t i = v.tokens.size() - 5; i < v.tokens.size(); ++i) v.token_types[i] = 3;
  return v;
}

}  // namespace ds4::gguf::forge
