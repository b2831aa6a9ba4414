// UTF-8 assembly: complete characters out at every split point; invalid bytes as U+FFFD per
// maximal subpart, independent of splitting. (The token-streaming cases from the former
// engine/tokenizer Utf8StreamDecoder, which ds4ctl generate used, live here too.)
#include "gateway/protocol/utf8_assembler.hpp"

#include <gtest/gtest.h>

#include <random>

namespace ds4::protocol {
namespace {

const std::string FFFD = "\xEF\xBF\xBD";

std::string whole(std::string_view in) {
  Utf8Assembler a;
  std::string out = a.push(in);
  return out + a.flush();
}

bool valid_utf8(std::string_view s) {
  Utf8Assembler a;
  std::string out = a.push(s);
  return out == s && a.flush().empty();
}

TEST(Utf8Assembler, ValidTextPassesThroughAtEverySplit) {
  const std::string text = "a\xC3\xA9z \xE2\x82\xAC \xF0\x9F\x99\x82 \xE4\xB8\xAD\xE6\x96\x87 \xF4\x8F\xBF\xBF!";
  EXPECT_EQ(whole(text), text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Assembler a;
    std::string first = a.push(std::string_view(text).substr(0, cut));
    EXPECT_TRUE(valid_utf8(first)) << cut;  // never half a character
    std::string out = first + a.push(std::string_view(text).substr(cut));
    out += a.flush();
    EXPECT_EQ(out, text) << cut;
  }
}

TEST(Utf8Assembler, ByteAtATimeHoldsIncompleteSequences) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("\xF0"), "");
  EXPECT_EQ(a.push("\x9F"), "");
  EXPECT_EQ(a.push("\x99"), "");
  EXPECT_EQ(a.pending(), 3u);
  EXPECT_EQ(a.push("\x82"), "\xF0\x9F\x99\x82");
  EXPECT_EQ(a.pending(), 0u);
}

TEST(Utf8Assembler, InvalidSequencesBecomeReplacementCharacters) {
  struct Case {
    std::string in, out;
  };
  const std::vector<Case> cases = {
      {"\x80", FFFD},  // stray continuation
      {"a\xBF"
       "b",
       "a" + FFFD + "b"},
      {"\xC0\xAF", FFFD + FFFD},  // overlong lead never valid
      {"\xC1\xBF", FFFD + FFFD},
      {"\xE0\x80\x80", FFFD + FFFD + FFFD},             // overlong 3-byte: second byte out of range
      {"\xED\xA0\x80", FFFD + FFFD + FFFD},             // surrogate
      {"\xF4\x90\x80\x80", FFFD + FFFD + FFFD + FFFD},  // above U+10FFFF
      {"\xF5\x80", FFFD + FFFD},
      {"\xFF", FFFD},
      {"\xE2\x82"
       "A",
       FFFD + "A"},  // truncated by an ASCII byte: one U+FFFD
      {"\xF0\x9F\x99"
       "\xF0\x9F\x99\x82",
       FFFD + "\xF0\x9F\x99\x82"},
      {"\xE2\x82", FFFD},  // truncated at the end (flush)
      {"\xF0\x9F", FFFD},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(whole(c.in), c.out) << testing::PrintToString(c.in);
    for (size_t cut = 0; cut <= c.in.size(); ++cut) {
      Utf8Assembler a;
      std::string out = a.push(c.in.substr(0, cut));
      out += a.push(c.in.substr(cut));
      out += a.flush();
      EXPECT_EQ(out, c.out) << testing::PrintToString(c.in) << " cut " << cut;
    }
    Utf8Assembler bytewise;
    std::string out;
    for (char ch : c.in) out += bytewise.push(std::string_view(&ch, 1));
    out += bytewise.flush();
    EXPECT_EQ(out, c.out) << testing::PrintToString(c.in);
  }
}

// Structural check written independently of the assembler: leads and continuation counts only.
bool whole_characters(std::string_view s) {
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

TEST(Utf8Assembler, TokenStreamHoldsBackSplitCharacters) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("a\xc3"), "a");
  EXPECT_EQ(a.pending(), 1u);
  EXPECT_EQ(a.push("\xa9"), "\xc3\xa9");
  EXPECT_EQ(a.push("\xf0\x9f"), "");
  EXPECT_EQ(a.push("\x98"), "");
  EXPECT_EQ(a.push("\x80!"), "\xf0\x9f\x98\x80!");
  EXPECT_EQ(a.flush(), "");
}

// The same pushes that Utf8StreamDecoder released as raw bytes: under the contract each byte run
// that can never complete becomes U+FFFD as soon as that is decided, and a held tail at the end of
// the stream becomes one U+FFFD.
TEST(Utf8Assembler, TokenStreamReplacesBytesThatCanNeverComplete) {
  Utf8Assembler a;
  EXPECT_EQ(a.push("\x80\x80"), FFFD + FFFD);  // stray continuations
  EXPECT_EQ(a.push("\xe4"), "");
  EXPECT_EQ(a.pending(), 1u);
  EXPECT_EQ(a.push("x"), FFFD + "x");  // the lead byte was not continued
  EXPECT_EQ(a.push("\xe4"), "");
  EXPECT_EQ(a.flush(), FFFD);
  EXPECT_EQ(a.pending(), 0u);
}

TEST(Utf8Assembler, RandomSplitsOfValidTextEmitOnlyWholeCharacters) {
  const std::string text = "Perché 日本語 😀👍🏽 naïve Ω — done.";
  std::mt19937 rng(3);
  for (int iter = 0; iter < 200; ++iter) {
    Utf8Assembler a;
    std::string out;
    for (size_t pos = 0; pos < text.size();) {
      size_t n = 1 + rng() % 4;
      std::string chunk = a.push(text.substr(pos, n));
      ASSERT_TRUE(whole_characters(chunk));
      out += chunk;
      pos += n;
    }
    out += a.flush();
    ASSERT_EQ(out, text);
  }
}

TEST(Utf8Assembler, ExhaustiveTwoByteInputsAreSplitInvariantAndValid) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      std::string in{static_cast<char>(a), static_cast<char>(b)};
      std::string expected = whole(in);
      ASSERT_TRUE(valid_utf8(expected));
      Utf8Assembler s;
      std::string out = s.push(in.substr(0, 1));
      out += s.push(in.substr(1));
      out += s.flush();
      ASSERT_EQ(out, expected) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace ds4::protocol
