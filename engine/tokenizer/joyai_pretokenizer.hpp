#pragma once
// The "joyai-llm" pre-tokenizer that DeepSeek V4 Flash declares in tokenizer.ggml.pre.
//
// BPE never merges across piece boundaries, so where text is cut decides the token stream even
// when the bytes are the same. The upstream regex is
//
//   \p{N}{1,3} | [CJK/Hiragana/Katakana]+ | [P/S][A-Za-z]+ | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//   | ?[\p{P}\p{S}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//
// and the reference engine (antirez/ds4) evaluates it by hand with a simplified alphabet, which
// is what the model's reference token streams were produced with. This is an independent
// implementation of those effective rules, tried in order at each position:
//
//   1. ASCII digits, at most three per piece ("12345" -> "123", "45").
//   2. A run of CJK ideographs (U+4E00-9FA5), Hiragana or Katakana.
//   3. One ASCII punctuation/symbol byte followed by ASCII letters (".foo", "_x").
//   4. A run of "letters": ASCII letters and every non-ASCII character (including malformed
//      bytes, which count as one-byte characters; a lead byte swallows the bytes it claims).
//   5. One other non-newline, non-punctuation byte (a space, a tab) followed by a letter run.
//   6. A space, then a punctuation run, then any \r/\n that follow.
//   7. A punctuation run, then any \r/\n that follow (">;\n" is one piece).
//   8. A whitespace run (space, \t, \n, \r, \v, \f): up to and including its last newline if it
//      has one; else, when longer than one byte and followed by a letter or punctuation, all but
//      its last byte (that byte joins the next piece by rule 5 or 6); else the whole run.
//   9. Anything else: one character.
//
// Punctuation is ASCII !-/ :-@ [-` {-~. Unlike the reference, which works on C strings, a NUL
// byte is ordinary input here (one-character piece), so no text is silently cut short.
#include <string_view>
#include <vector>

namespace ds4::tokenizer {

// Calls on_piece(std::string_view) for each piece, in order; the pieces concatenate to `text`.
template <class F>
void for_each_joyai_piece(std::string_view text, F&& on_piece);

// Convenience form for tests and tools.
std::vector<std::string_view> split_joyai(std::string_view text);

// The end of the piece that starts at `pos` (pos < text.size(); the result is > pos).
size_t joyai_piece_end(std::string_view text, size_t pos);

template <class F>
void for_each_joyai_piece(std::string_view text, F&& on_piece) {
  for (size_t pos = 0; pos < text.size();) {
    size_t end = joyai_piece_end(text, pos);
    on_piece(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace ds4::tokenizer
