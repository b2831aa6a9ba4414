#pragma once
// GPT-2 byte-level alphabet and the small UTF-8 helpers the tokenizer needs.
//
// Byte-level BPE vocabularies (GPT-2, DeepSeek) never store raw bytes: every byte is first mapped
// to a printable Unicode code point so that token strings are valid, whitespace-free UTF-8. Bytes
// 33-126, 161-172 and 174-255 map to themselves; the 68 remaining bytes (controls, space, DEL,
// NBSP, soft hyphen) map to U+0100 + n in byte order. So " " becomes "Ġ" (U+0120) and "\n"
// becomes "Ċ" (U+010A). The tokenizer converts vocabulary strings back to raw bytes once at load
// time and then works on raw bytes only; these functions are that conversion.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ds4::tokenizer {

// The code point byte `b` is written as in vocabulary strings.
uint32_t byte_to_codepoint(uint8_t b);
// The byte a vocabulary code point stands for, or nullopt for a code point outside the alphabet.
std::optional<uint8_t> codepoint_to_byte(uint32_t cp);

// Appends the UTF-8 encoding of `cp` (any value up to 0x1FFFFF, no validation) to `out`.
void append_utf8(std::string& out, uint32_t cp);

// The length a UTF-8 sequence claims from its first byte: 1 for ASCII, continuation bytes and
// bytes that cannot start a sequence; 2, 3 or 4 for lead bytes. No validation of what follows.
inline int utf8_claimed_length(uint8_t c) {
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) return 2;
  if ((c & 0xf0) == 0xe0) return 3;
  if ((c & 0xf8) == 0xf0) return 4;
  return 1;
}

// Position after the "character" starting at `pos`: the claimed length, clipped to one byte when
// the sequence would run past the end of `s`. Malformed input still always advances.
inline size_t next_char(std::string_view s, size_t pos) {
  size_t n = static_cast<size_t>(utf8_claimed_length(static_cast<uint8_t>(s[pos])));
  return pos + n > s.size() ? pos + 1 : pos + n;
}

// The code point of the character at `pos` decoded without validating continuation bytes (the
// same leniency as next_char), and the position after it.
uint32_t peek_codepoint(std::string_view s, size_t pos, size_t* next);

// Maps raw bytes to a vocabulary string ("hello world" -> "helloĠworld").
std::string bytes_to_vocab_string(std::string_view raw);
// Maps a vocabulary string back to raw bytes; code points outside the byte alphabet are dropped.
std::string vocab_string_to_bytes(std::string_view vocab);

}  // namespace ds4::tokenizer
