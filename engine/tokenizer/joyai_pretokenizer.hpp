#pragma once
// The "joyai-llm" pre-tokenizer that DeepSeek V4 Flash declares in tokenizer.ggml.pre: splits
// text into the pieces BPE merges within (BPE never merges across piece boundaries, so the cut
// decides the token stream). An independent implementation of the rules antirez/ds4 evaluates
// by hand; unlike the reference, a NUL byte is ordinary input. The upstream regex and the nine
// rules in order: docs/engine.md §pre-tokenizer-rules.
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
