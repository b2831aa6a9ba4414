// Utf8StreamDecoder: streamed output never splits a character and never loses a byte.
#include "engine/tokenizer/utf8_stream.hpp"

#include <gtest/gtest.h>

#include <random>

namespace ds4::tokenizer {
namespace {

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(Utf8Stream, HoldsBackSplitCharacters) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.push("a\xc3"), "a");
  EXPECT_EQ(d.pending(), 1u);
  EXPECT_EQ(d.push("\xa9"), "\xc3\xa9");
  EXPECT_EQ(d.push("\xf0\x9f"), "");
  EXPECT_EQ(d.push("\x98"), "");
  EXPECT_EQ(d.push("\x80!"), "\xf0\x9f\x98\x80!");
  EXPECT_EQ(d.finish(), "");
}

TEST(Utf8Stream, ReleasesBytesThatCanNeverComplete) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.push("\x80\x80"), "\x80\x80");  // stray continuations
  EXPECT_EQ(d.push("\xe4"), "");
  EXPECT_EQ(d.push("x"), "\xe4x");  // the lead byte was not continued
  EXPECT_EQ(d.push("\xe4"), "");
  EXPECT_EQ(d.finish(), "\xe4");
}

TEST(Utf8Stream, RandomSplitsOfValidTextEmitOnlyWholeCharacters) {
  const std::string text = "Perché 日本語 😀👍🏽 naïve Ω — done.";
  std::mt19937 rng(3);
  for (int iter = 0; iter < 200; ++iter) {
    Utf8StreamDecoder d;
    std::string out;
    for (size_t pos = 0; pos < text.size();) {
      size_t n = 1 + rng() % 4;
      std::string chunk = d.push(text.substr(pos, n));
      ASSERT_TRUE(valid_utf8(chunk));
      out += chunk;
      pos += n;
    }
    out += d.finish();
    ASSERT_EQ(out, text);
  }
}

}  // namespace
}  // namespace ds4::tokenizer
