// Tokenizer: special-token cutting, piece splitting and BPE glued together; see tokenizer.hpp.
#include "engine/tokenizer/tokenizer.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>

#include "engine/tokenizer/bpe_merger.hpp"
#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/joyai_pretokenizer.hpp"

namespace ds4::tokenizer {
namespace {

constexpr std::string_view kFullwidthBar = "｜";  // U+FF5C, marks DeepSeek control tokens

}  // namespace

Tokenizer::Tokenizer(Vocabulary vocab) {
  if (vocab.tokens.empty()) throw std::invalid_argument("tokenizer: the vocabulary has no tokens");
  merger_ = std::make_unique<BpeMerger>(vocab.tokens, vocab.merges);

  std::unordered_map<std::string_view, int32_t> id_of;
  id_of.reserve(vocab.tokens.size());
  for (size_t i = 0; i < vocab.tokens.size(); ++i)
    id_of.insert_or_assign(std::string_view(vocab.tokens[i]), static_cast<int32_t>(i));

  auto lookup = [&](std::string_view s) -> std::optional<int32_t> {
    auto it = id_of.find(s);
    if (it == id_of.end()) return std::nullopt;
    return it->second;
  };
  for (std::string_view s : {kBos, kEos, kUser, kAssistant, kThinkStart, kThinkEnd, kDsml})
    if (auto id = lookup(s)) specials_.push_back(Special{s, *id});

  const int32_t n = static_cast<int32_t>(vocab.tokens.size());
  auto resolve = [&](std::string_view literal, std::optional<int32_t> fallback, const char* what) -> int32_t {
    if (auto id = lookup(literal)) return *id;
    if (fallback && *fallback >= 0 && *fallback < n) return *fallback;
    throw std::invalid_argument(
        fmt::format("tokenizer: the vocabulary ({} tokens) has no {} token: neither the string {} nor a valid "
                    "{}_token_id{}",
                    n, what, literal, what, fallback ? fmt::format(" ({} is out of range)", *fallback) : ""));
  };
  bos_ = resolve(kBos, vocab.bos_id, "bos");
  eos_ = resolve(kEos, vocab.eos_id, "eos");

  token_bytes_.reserve(vocab.tokens.size());
  control_.reserve(vocab.tokens.size());
  for (const std::string& t : vocab.tokens) {
    bool control = t.find(kFullwidthBar) != std::string::npos;
    control_.push_back(control);
    token_bytes_.push_back(control ? t : vocab_string_to_bytes(t));
  }
  for (const Special& s : specials_) control_[static_cast<size_t>(s.id)] = true;
  token_strings_ = std::move(vocab.tokens);
  // specials_ point into the static literals, not into token_strings_, so the move is safe.
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

const Tokenizer::Special* Tokenizer::special_at(std::string_view text, size_t pos) const {
  // Every special string starts with '<' or the first byte of U+FF5C.
  const char c = text[pos];
  if (c != '<' && c != kFullwidthBar[0]) return nullptr;
  std::string_view rest = text.substr(pos);
  for (const Special& s : specials_)
    if (rest.starts_with(s.text)) return &s;
  return nullptr;
}

void Tokenizer::append_encoded_raw(std::string_view text, std::vector<int32_t>& out) const {
  for_each_joyai_piece(text, [&](std::string_view piece) { merger_->encode_piece(piece, out); });
}

void Tokenizer::append_encoded(std::string_view text, std::vector<int32_t>& out) const {
  size_t span_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (const Special* s = special_at(text, pos)) {
      append_encoded_raw(text.substr(span_start, pos - span_start), out);
      out.push_back(s->id);
      pos += s->text.size();
      span_start = pos;
    } else {
      ++pos;
    }
  }
  append_encoded_raw(text.substr(span_start), out);
}

std::vector<int32_t> Tokenizer::encode_with_plain(std::string_view text,
                                                  std::span<const std::pair<size_t, size_t>> plain) const {
  size_t last = 0;
  for (auto [begin, end] : plain) {
    if (begin < last || begin > end || end > text.size())
      throw std::invalid_argument(
          fmt::format("tokenizer: plain span [{}, {}) is unsorted, overlapping or outside "
                      "the {}-byte text",
                      begin, end, text.size()));
    last = end;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  size_t span_start = 0;
  size_t k = 0;  // the first plain span that does not end at or before pos
  for (size_t pos = 0; pos < text.size();) {
    while (k < plain.size() && plain[k].second <= pos) ++k;
    if (k < plain.size() && plain[k].first <= pos) {
      pos = plain[k].second;  // client bytes: never a special
      continue;
    }
    const size_t limit = k < plain.size() ? plain[k].first : text.size();
    if (const Special* s = special_at(text, pos); s && pos + s->text.size() <= limit) {
      append_encoded_raw(text.substr(span_start, pos - span_start), out);
      out.push_back(s->id);
      pos += s->text.size();
      span_start = pos;
    } else {
      ++pos;
    }
  }
  append_encoded_raw(text.substr(span_start), out);
  return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  append_encoded(text, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_raw(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  append_encoded_raw(text, out);
  return out;
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= token_strings_.size())
    throw std::out_of_range(
        fmt::format("tokenizer: token id {} is outside the vocabulary [0, {})", id, token_strings_.size()));
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(id);
    out += token_bytes_[static_cast<size_t>(id)];
  }
  return out;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  check_id(id);
  return token_bytes_[static_cast<size_t>(id)];
}

const std::string& Tokenizer::token_string(int32_t id) const {
  check_id(id);
  return token_strings_[static_cast<size_t>(id)];
}

std::optional<int32_t> Tokenizer::special(std::string_view literal) const {
  for (const Special& s : specials_)
    if (s.text == literal) return s.id;
  return std::nullopt;
}

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < control_.size() && control_[static_cast<size_t>(id)];
}

}  // namespace ds4::tokenizer
