// Piece boundaries of the joyai-llm pre-tokenizer, rule by rule (docs/engine.md §pre-tokenizer-rules).
// Expected splits are worked out by hand from the rules, not produced by the code under test.
#include "engine/tokenizer/joyai_pretokenizer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ds4::tokenizer {
namespace {

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view p : split_joyai(s)) out.emplace_back(p);
  return out;
}
using V = std::vector<std::string>;

TEST(JoyaiPretokenizer, DigitsAtMostThreePerPiece) {
  EXPECT_EQ(split("12345"), (V{"123", "45"}));
  EXPECT_EQ(split(" 128"), (V{" ", "128"}));
  EXPECT_EQ(split("v2024x"), (V{"v", "202", "4", "x"}));
}

TEST(JoyaiPretokenizer, LeadingSpaceJoinsWordAndRunKeepsTheRest) {
  EXPECT_EQ(split("    int"), (V{"   ", " int"}));
  EXPECT_EQ(split("hello world"), (V{"hello", " world"}));
  EXPECT_EQ(split("a\tb"), (V{"a", "\tb"}));
  EXPECT_EQ(split("x  "), (V{"x", "  "}));          // trailing run: whole
  EXPECT_EQ(split("x   9"), (V{"x", "   ", "9"}));  // digits don't take the space
}

TEST(JoyaiPretokenizer, NewlinesEndWhitespacePieces) {
  EXPECT_EQ(split("a\n\nb"), (V{"a", "\n\n", "b"}));
  // After the newline, "  b" is a two-space run before a letter: one space stays, one joins.
  EXPECT_EQ(split("a \n  b"), (V{"a", " \n", " ", " b"}));
  EXPECT_EQ(split("\r\n"), (V{"\r\n"}));
}

TEST(JoyaiPretokenizer, PunctuationRuns) {
  EXPECT_EQ(split(">;\n"), (V{">;\n"}));
  EXPECT_EQ(split("x = y;\n}"), (V{"x", " =", " y", ";\n", "}"}));
  EXPECT_EQ(split(".foo()"), (V{".foo", "()"}));
  EXPECT_EQ(split("a  ->b"), (V{"a", " ", " ->", "b"}));
  EXPECT_EQ(split("_x1"), (V{"_x", "1"}));
}

TEST(JoyaiPretokenizer, NonAsciiIsLetterAndCjkIsItsOwnRun) {
  EXPECT_EQ(split("perché sì"), (V{"perché", " sì"}));
  // The CJK rule only fires where a piece starts; a letter run already under way swallows CJK,
  // and a space before kana joins it by rule 5, exactly as in the reference.
  EXPECT_EQ(split("日本語def"), (V{"日本語", "def"}));
  EXPECT_EQ(split("abc日本語def"), (V{"abc日本語def"}));
  EXPECT_EQ(split(" ひらがなカタカナ"), (V{" ひらがなカタカナ"}));
  EXPECT_EQ(split("漢字。"), (V{"漢字", "。"}));
  EXPECT_EQ(split("😀😀 x"), (V{"😀😀", " x"}));
}

TEST(JoyaiPretokenizer, MalformedBytesStillAdvance) {
  // A lone lead byte at the end is one byte; a lead byte swallows the bytes it claims.
  EXPECT_EQ(split("a\xe4"), (V{"a\xe4"}));
  EXPECT_EQ(split(std::string("\x01\x02", 2)), (V{"\x01", "\x02"}));
  EXPECT_EQ(split(std::string("a\0b", 3)), (V{"a", std::string("\0b", 2)}));
}

TEST(JoyaiPretokenizer, PiecesConcatenateToInput) {
  std::string s = "fn main() {\n    let x = 42_000;\n\tprintln!(\"{x}\");\n}\n\n\n  ";
  std::string joined;
  for (std::string_view p : split_joyai(s)) {
    EXPECT_FALSE(p.empty());
    joined += p;
  }
  EXPECT_EQ(joined, s);
}

}  // namespace
}  // namespace ds4::tokenizer
