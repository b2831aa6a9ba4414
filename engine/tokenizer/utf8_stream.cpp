// Holding back incomplete UTF-8 tails; see utf8_stream.hpp.
#include "engine/tokenizer/utf8_stream.hpp"

#include "engine/tokenizer/byte_level.hpp"

#include <cstdint>

namespace ds4::tokenizer {

size_t utf8_complete_prefix(std::string_view s) {
  // Only the last three bytes can belong to an unfinished character: find the last lead byte
  // among them and check whether the bytes after it are all continuations and too few.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(s[n - back]);
    if ((c & 0xc0) == 0x80) continue;  // continuation byte: keep looking for its lead
    const int need = utf8_claimed_length(c);
    // An ASCII byte or invalid lead ends the search: nothing after it can be waiting.
    if (need <= 1) return n;
    return static_cast<size_t>(need) > back ? n - back : n;
  }
  return n;
}

std::string Utf8StreamDecoder::push(std::string_view bytes) {
  held_.append(bytes);
  const size_t ready = utf8_complete_prefix(held_);
  std::string out = held_.substr(0, ready);
  held_.erase(0, ready);
  return out;
}

std::string Utf8StreamDecoder::finish() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace ds4::tokenizer
