// Property tests for the tokenizer on random text: decode(encode(s)) == s for any byte string, and
// the heap-driven BPE gives exactly the ids of the textbook algorithm (rescan for the lowest-rank
// pair, leftmost on ties, after every merge), implemented here independently on strings as an
// oracle. Inputs mix ASCII code, digits, CJK, emoji, accented letters, invalid bytes, NULs, long
// whitespace runs and whole or partial special strings. Seeds are fixed, so failures reproduce.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <unordered_map>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/joyai_pretokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/engine/tokenizer/text_test_paths.hpp"

namespace ds4::tokenizer {
namespace {

// The textbook algorithm over vocabulary strings, with the reference's fallback for symbols that
// are not tokens.
class OracleBpe {
 public:
  explicit OracleBpe(const Vocabulary& v) {
    for (size_t i = 0; i < v.tokens.size(); ++i) id_[v.tokens[i]] = static_cast<int32_t>(i);
    for (size_t r = 0; r < v.merges.size(); ++r) rank_[v.merges[r]] = static_cast<int>(r);
  }
  std::vector<int32_t> encode_raw(std::string_view text) const {
    std::vector<int32_t> out;
    for (std::string_view piece : split_joyai(text)) piece_ids(piece, out);
    return out;
  }

 private:
  void piece_ids(std::string_view raw, std::vector<int32_t>& out) const {
    std::vector<std::string> sym;
    for (char c : raw) {
      std::string s;
      append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(c)));
      sym.push_back(s);
    }
    for (;;) {
      int best = INT_MAX;
      size_t at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        auto it = rank_.find(sym[i] + " " + sym[i + 1]);
        if (it != rank_.end() && it->second < best) best = it->second, at = i;
      }
      if (best == INT_MAX) break;
      sym[at] += sym[at + 1];
      sym.erase(sym.begin() + static_cast<long>(at) + 1);
    }
    for (const std::string& s : sym) {
      if (auto it = id_.find(s); it != id_.end()) {
        out.push_back(it->second);
        continue;
      }
      for (char c : s)
        if (auto it = id_.find(std::string(1, c)); it != id_.end()) out.push_back(it->second);
    }
  }
  std::unordered_map<std::string, int32_t> id_;
  std::unordered_map<std::string, int> rank_;
};

std::string random_text(std::mt19937_64& rng, size_t fragments) {
  static const char* kFragments[] = {"the",
                                     " compressed",
                                     "KV",
                                     " cache",
                                     "int",
                                     "    ",
                                     "\t",
                                     "\n",
                                     "\r\n",
                                     "  \n\n ",
                                     "0",
                                     "12",
                                     "1234567",
                                     ".",
                                     "->",
                                     ">;\n",
                                     "(x)",
                                     "{",
                                     "}",
                                     "_id",
                                     "\"",
                                     "'s",
                                     "é",
                                     "perché",
                                     "日本語",
                                     "ひらがな",
                                     "カタカナ",
                                     "中文字",
                                     "😀",
                                     "👍🏽",
                                     "🇮🇹",
                                     "Ω",
                                     "\xe2\x80\x8b",
                                     "<｜User｜>",
                                     "<｜Assistant｜>",
                                     "</think>",
                                     "<think>",
                                     "｜DSML｜",
                                     "<｜begin▁of▁sentence｜>",
                                     "<｜end▁of▁sentence｜>",
                                     "<｜User",
                                     "｜DSM",
                                     "</",
                                     "<tool_result>",
                                     "｜",
                                     "▁"};
  constexpr size_t kN = sizeof(kFragments) / sizeof(kFragments[0]);
  std::string s;
  for (size_t i = 0; i < fragments; ++i) {
    switch (rng() % 8) {
      case 0: {  // raw bytes, often invalid UTF-8 (lone leads, stray continuations, NUL)
        size_t n = 1 + rng() % 4;
        for (size_t k = 0; k < n; ++k) s.push_back(static_cast<char>(rng() % 256));
        break;
      }
      case 1: {  // whitespace runs
        size_t n = 1 + rng() % 12;
        const char ws[] = {' ', ' ', ' ', '\t', '\n', '\r', '\v', '\f'};
        for (size_t k = 0; k < n; ++k) s.push_back(ws[rng() % sizeof(ws)]);
        break;
      }
      case 2: {  // ASCII printable
        size_t n = 1 + rng() % 8;
        for (size_t k = 0; k < n; ++k) s.push_back(static_cast<char>(32 + rng() % 95));
        break;
      }
      default: s += kFragments[rng() % kN];
    }
  }
  return s;
}

class TinyVocabProperties : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto file = gguf::GgufFile::open(text_tests::ds4_vectors_dir() + "/model.gguf");
    vocab_ = new Vocabulary{file.get_array<std::string>("tokenizer.ggml.tokens"),
                            file.get_array<std::string>("tokenizer.ggml.merges"), 0, 1};
    tok_ = new Tokenizer(Tokenizer::from_gguf(file));
    oracle_ = new OracleBpe(*vocab_);
  }
  static void TearDownTestSuite() {
    delete oracle_;
    delete tok_;
    delete vocab_;
  }
  static Vocabulary* vocab_;
  static Tokenizer* tok_;
  static OracleBpe* oracle_;
};
Vocabulary* TinyVocabProperties::vocab_ = nullptr;
Tokenizer* TinyVocabProperties::tok_ = nullptr;
OracleBpe* TinyVocabProperties::oracle_ = nullptr;

TEST_F(TinyVocabProperties, RoundTripOnRandomText) {
  std::mt19937_64 rng(20260601);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s = random_text(rng, 1 + rng() % 40);
    ASSERT_EQ(tok_->decode(tok_->encode(s)), s) << "iteration " << iter;
    ASSERT_EQ(tok_->decode(tok_->encode_raw(s)), s) << "iteration " << iter;
  }
}

TEST_F(TinyVocabProperties, HeapBpeEqualsRescanningOracle) {
  std::mt19937_64 rng(77);
  for (int iter = 0; iter < 1000; ++iter) {
    std::string s = random_text(rng, 1 + rng() % 30);
    ASSERT_EQ(tok_->encode_raw(s), oracle_->encode_raw(s)) << "iteration " << iter;
  }
}

TEST_F(TinyVocabProperties, LongRunsMatchOracleAndRoundTrip) {
  // Single pieces of a few thousand bytes: letters (one giant word), spaces, punctuation.
  std::mt19937_64 rng(5);
  std::string word;
  const char letters[] = "etaoinshrdlucmfwyp";
  for (int i = 0; i < 3000; ++i) word.push_back(letters[rng() % (sizeof(letters) - 1)]);
  for (const std::string& s :
       {word, std::string(4000, ' '), std::string(3000, 'a'), std::string(2000, '-') + "\n", std::string(5000, '\n')}) {
    ASSERT_EQ(tok_->encode_raw(s), oracle_->encode_raw(s)) << s.substr(0, 16);
    ASSERT_EQ(tok_->decode(tok_->encode(s)), s);
  }
}

TEST_F(TinyVocabProperties, VeryLongPromptRoundTrips) {
  // A megabyte of mixed text: exercises the piece loop and scratch reuse at prompt scale.
  std::mt19937_64 rng(99);
  std::string s;
  while (s.size() < (1u << 20)) s += random_text(rng, 64);
  std::vector<int32_t> ids = tok_->encode(s);
  EXPECT_LT(ids.size(), s.size());
  EXPECT_EQ(tok_->decode(ids), s);
}

// encode_with_plain: random texts cut into random plain spans. No control token ever holds a
// byte of a plain span; the ids round-trip; with no spans it is encode(); a special string wholly
// outside the spans still becomes its id; stretches between control tokens are encode_raw().
TEST_F(TinyVocabProperties, PlainSpansNeverYieldControlTokens) {
  std::mt19937_64 rng(2812);
  EXPECT_EQ(tok_->encode_with_plain("<｜User｜>hi", {}), tok_->encode("<｜User｜>hi"));
  for (int iter = 0; iter < 2000; ++iter) {
    const std::string s = random_text(rng, 1 + rng() % 30);
    std::vector<std::pair<size_t, size_t>> plain;
    for (size_t pos = 0; pos < s.size();) {
      const size_t begin = pos + rng() % 8, end = begin + rng() % 24;
      if (end > s.size()) break;
      plain.emplace_back(begin, end);
      pos = end;
    }
    const std::vector<int32_t> ids = tok_->encode_with_plain(s, plain);
    ASSERT_EQ(tok_->decode(ids), s) << "iteration " << iter;
    size_t offset = 0;
    std::vector<int32_t> stretch;
    size_t stretch_start = 0;
    for (int32_t id : ids) {
      const size_t len = tok_->token_bytes(id).size();
      if (tok_->special(tok_->token_bytes(id)) == id) {
        for (auto [b, e] : plain) ASSERT_FALSE(offset < e && b < offset + len) << "iteration " << iter;
        ASSERT_EQ(stretch, tok_->encode_raw(s.substr(stretch_start, offset - stretch_start))) << "iteration " << iter;
        stretch.clear();
        stretch_start = offset + len;
      } else {
        stretch.push_back(id);
      }
      offset += len;
    }
    if (plain.empty()) {
      ASSERT_EQ(ids, tok_->encode(s)) << "iteration " << iter;
    }
  }
  // A special string that only starts outside a span (ends inside it) is text too.
  const std::string t = "a<｜User｜>b";
  const std::vector<int32_t> cut = tok_->encode_with_plain(t, std::vector<std::pair<size_t, size_t>>{{4, 5}});
  EXPECT_EQ(cut, tok_->encode_raw(t));
  EXPECT_THROW(tok_->encode_with_plain(t, std::vector<std::pair<size_t, size_t>>{{3, 2}}), std::invalid_argument);
  EXPECT_THROW(tok_->encode_with_plain(t, std::vector<std::pair<size_t, size_t>>{{0, 99}}), std::invalid_argument);
}

TEST(ForgedVocabProperties, RoundTripAndOracleOnTheForgeVocabulary) {
  const std::string path = text_tests::forged_tiny_model();
  if (path.empty()) GTEST_SKIP() << "this build has no forged_tiny_model target";
  auto file = gguf::GgufFile::open(path);
  const Vocabulary v{file.get_array<std::string>("tokenizer.ggml.tokens"),
                     file.get_array<std::string>("tokenizer.ggml.merges"), std::nullopt, std::nullopt};
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const OracleBpe oracle(v);
  ASSERT_GT(v.merges.size(), 100u);
  std::mt19937_64 rng(4242);
  for (int iter = 0; iter < 500; ++iter) {
    std::string s = random_text(rng, 1 + rng() % 30);
    ASSERT_EQ(tok.decode(tok.encode(s)), s) << "iteration " << iter;
    ASSERT_EQ(tok.encode_raw(s), oracle.encode_raw(s)) << "iteration " << iter;
  }
}

// A toy vocabulary where a merge result is missing from the tokens, a merge is listed twice, one
// merge is malformed and one byte has no token: checks the reference's fallback rules.
TEST(TokenizerFallback, MissingMergeResultFallsBackToSingleBytes) {
  Vocabulary v;
  v.tokens = {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "a", "b", "c", "ab"};
  v.merges = {"a b", "ab c", "a c", "bogus", "a c"};
  Tokenizer tok(v);
  // "ab" merges (rank 0), then "ab c" (rank 1) makes "abc", which is not a token: its single
  // bytes are looked up and emitted.
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{5}));
  // "ac" merges by the last listing of "a c" into the non-token "ac": fallback again.
  EXPECT_EQ(tok.encode("ac"), (std::vector<int32_t>{2, 4}));
  // 'd' has no byte token at all and is dropped, as in the reference.
  EXPECT_EQ(tok.encode("d"), (std::vector<int32_t>{}));
  OracleBpe oracle(v);
  for (std::string s : {"abcabc", "aacbc", "cab", "abab d"}) EXPECT_EQ(tok.encode_raw(s), oracle.encode_raw(s)) << s;
}

TEST(TokenizerFallback, NeedsBosAndEos) {
  Vocabulary v;
  v.tokens = {"a", "b"};
  EXPECT_THROW(Tokenizer{v}, std::invalid_argument);
  v.bos_id = 0;
  v.eos_id = 1;
  Tokenizer tok(v);
  EXPECT_EQ(tok.bos(), 0);
  EXPECT_EQ(tok.special(Tokenizer::kUser), std::nullopt);
  // Without the special tokens in the vocabulary, their strings are ordinary text.
  EXPECT_EQ(tok.encode("<think>").size(), tok.encode_raw("<think>").size());
}

}  // namespace
}  // namespace ds4::tokenizer
