#pragma once
// Streaming token text without splitting UTF-8 characters.
//
// Byte-level BPE tokens are byte strings, not characters: "é" may arrive as two tokens of one byte
// each, and printing or sending (SSE) the first byte alone produces mojibake or invalid JSON
// strings. Utf8StreamDecoder buffers bytes and releases only the longest prefix that does not end
// inside a character that may still be completed. Bytes that can never become valid UTF-8 (a stray
// continuation byte, an overlong or truncated sequence followed by something else) are released
// as they are, so nothing is ever lost: the concatenation of everything push() and finish() return
// equals the concatenation of the input.
#include <string>
#include <string_view>

namespace ds4::tokenizer {

class Utf8StreamDecoder {
 public:
  // Appends `bytes` and returns the text now safe to emit.
  std::string push(std::string_view bytes);
  // Returns whatever is still held back (an incomplete final character) and resets.
  std::string finish();
  // Bytes held back, waiting for the rest of a character.
  size_t pending() const { return held_.size(); }

 private:
  std::string held_;
};

// Length of the longest prefix of `s` that does not end with the start of a UTF-8 sequence that
// more bytes could still complete.
size_t utf8_complete_prefix(std::string_view s);

}  // namespace ds4::tokenizer
