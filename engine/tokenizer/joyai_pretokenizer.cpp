// The joyai-llm piece splitter; the rules are documented in joyai_pretokenizer.hpp.
#include "engine/tokenizer/joyai_pretokenizer.hpp"

#include <cstdint>

#include "engine/tokenizer/byte_level.hpp"

namespace ds4::tokenizer {
namespace {

inline uint8_t byte_at(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

inline bool is_ascii_letter(uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
inline bool is_ascii_digit(uint8_t c) { return c >= '0' && c <= '9'; }
inline bool is_newline(uint8_t c) { return c == '\n' || c == '\r'; }
inline bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
inline bool is_punct(uint8_t c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}
// Letters in the collapsed alphabet: ASCII letters and any byte >= 0x80.
inline bool is_letter(uint8_t c) { return c >= 0x80 || is_ascii_letter(c); }

inline bool is_cjk_kana(std::string_view s, size_t pos) {
  if (byte_at(s, pos) < 0x80) return false;
  size_t next = pos;
  uint32_t cp = peek_codepoint(s, pos, &next);
  return (cp >= 0x4e00 && cp <= 0x9fa5) || (cp >= 0x3040 && cp <= 0x30ff);
}

size_t skip_letters(std::string_view s, size_t pos) {
  while (pos < s.size() && is_letter(byte_at(s, pos))) pos = next_char(s, pos);
  return pos;
}

size_t skip_punct_then_newlines(std::string_view s, size_t pos) {
  while (pos < s.size() && is_punct(byte_at(s, pos))) ++pos;
  while (pos < s.size() && is_newline(byte_at(s, pos))) ++pos;
  return pos;
}

size_t whitespace_piece_end(std::string_view s, size_t pos) {
  size_t end = pos;
  size_t after_last_newline = 0;
  while (end < s.size() && is_space(byte_at(s, end))) {
    if (is_newline(byte_at(s, end))) after_last_newline = end + 1;
    ++end;
  }
  if (after_last_newline != 0) return after_last_newline;
  if (end < s.size() && end > pos + 1 && (is_letter(byte_at(s, end)) || is_punct(byte_at(s, end)))) return end - 1;
  return end;
}

}  // namespace

size_t joyai_piece_end(std::string_view s, size_t pos) {
  const size_t n = s.size();
  const uint8_t c = byte_at(s, pos);
  const bool has_next = pos + 1 < n;

  if (is_ascii_digit(c)) {  // rule 1
    size_t end = pos;
    while (end < n && end - pos < 3 && is_ascii_digit(byte_at(s, end))) ++end;
    return end;
  }
  if (is_cjk_kana(s, pos)) {  // rule 2
    size_t end = pos;
    do end = next_char(s, end);
    while (end < n && is_cjk_kana(s, end));
    return end;
  }
  if (is_punct(c) && has_next && is_ascii_letter(byte_at(s, pos + 1))) {  // rule 3
    size_t end = pos + 1;
    while (end < n && is_ascii_letter(byte_at(s, end))) ++end;
    return end;
  }
  if (is_letter(c)) return skip_letters(s, pos);                                     // rule 4
  if (!is_newline(c) && !is_punct(c) && has_next && is_letter(byte_at(s, pos + 1)))  // rule 5
    return skip_letters(s, pos + 1);
  if (c == ' ' && has_next && is_punct(byte_at(s, pos + 1)))  // rule 6
    return skip_punct_then_newlines(s, pos + 1);
  if (is_punct(c)) return skip_punct_then_newlines(s, pos);  // rule 7
  if (is_space(c)) return whitespace_piece_end(s, pos);      // rule 8
  return next_char(s, pos);                                  // rule 9
}

std::vector<std::string_view> split_joyai(std::string_view text) {
  std::vector<std::string_view> pieces;
  for_each_joyai_piece(text, [&](std::string_view p) { pieces.push_back(p); });
  return pieces;
}

}  // namespace ds4::tokenizer
