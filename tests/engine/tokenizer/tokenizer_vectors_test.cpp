// The tokenizer against fixed vectors from the real DeepSeek-layout vocabulary of ds4-tiny
// (model.gguf: 1024 tokens, 761 merges). The text64 prompt ids were produced by the reference
// engine (antirez/ds4) from the chat-rendered text, so they pin the pre-tokenizer, the merge
// order and the special-token handling at once.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/engine/tokenizer/text_test_paths.hpp"

namespace ds4::tokenizer {
namespace {

class TinyVocab : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = text_tests::ds4_vectors_dir();
    auto file = gguf::GgufFile::open(dir + "/model.gguf");
    tok_ = new Tokenizer(Tokenizer::from_gguf(file));
    std::ifstream in(dir + "/cases.json");
    ASSERT_TRUE(in) << "cannot read " << dir << "/cases.json";
    std::stringstream ss;
    ss << in.rdbuf();
    cases_ = new boost::json::value(boost::json::parse(ss.str()));
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete cases_;
  }
  static const boost::json::object& find_case(std::string_view name) {
    for (const auto& c : cases_->at("cases").as_array())
      if (c.at("name").as_string() == name) return c.as_object();
    throw std::runtime_error("case not found");
  }
  static std::vector<int32_t> ids_of(const boost::json::value& arr) {
    std::vector<int32_t> ids;
    for (const auto& v : arr.as_array()) ids.push_back(static_cast<int32_t>(v.as_int64()));
    return ids;
  }
  static Tokenizer* tok_;
  static boost::json::value* cases_;
};
Tokenizer* TinyVocab::tok_ = nullptr;
boost::json::value* TinyVocab::cases_ = nullptr;

TEST_F(TinyVocab, LoadsVocabularyAndSpecials) {
  EXPECT_EQ(tok_->vocab_size(), 1024u);
  EXPECT_EQ(tok_->bos(), 0);
  EXPECT_EQ(tok_->eos(), 1);
  EXPECT_EQ(tok_->special(Tokenizer::kUser), 1019);
  EXPECT_EQ(tok_->special(Tokenizer::kAssistant), 1020);
  EXPECT_EQ(tok_->special(Tokenizer::kThinkStart), 1021);
  EXPECT_EQ(tok_->special(Tokenizer::kThinkEnd), 1022);
  EXPECT_EQ(tok_->special(Tokenizer::kDsml), 1023);
  EXPECT_EQ(tok_->special("<tool_result>"), std::nullopt);
  // Byte symbols are ids 2..257 in byte order.
  EXPECT_EQ(tok_->token_bytes(2 + 'A'), "A");
  EXPECT_EQ(tok_->token_bytes(2 + ' '), " ");
  EXPECT_EQ(tok_->token_string(2 + ' '), "Ġ");
  EXPECT_EQ(tok_->token_bytes(2 + 0xff), "\xff");
}

TEST_F(TinyVocab, Text64ChatPromptMatchesReference) {
  const auto& c = find_case("text64");
  const std::string text(c.at("text").as_string());
  const std::string rendered = std::string(Tokenizer::kBos) + std::string(Tokenizer::kUser) + text +
                               std::string(Tokenizer::kAssistant) + std::string(Tokenizer::kThinkEnd);
  const std::vector<int32_t> expected = ids_of(c.at("prompt"));
  EXPECT_EQ(tok_->encode(rendered), expected);
  EXPECT_EQ(tok_->decode(expected), rendered);

  // The same ids built the way the reference renderer does: specials by id, text raw.
  std::vector<int32_t> built{tok_->bos(), *tok_->special(Tokenizer::kUser)};
  tok_->append_encoded_raw(text, built);
  built.push_back(*tok_->special(Tokenizer::kAssistant));
  built.push_back(*tok_->special(Tokenizer::kThinkEnd));
  EXPECT_EQ(built, expected);
}

TEST_F(TinyVocab, HandCheckedPieces) {
  // " 128": the digits are their own piece, so the space cannot merge into them.
  EXPECT_EQ(tok_->encode(" 128"), (std::vector<int32_t>{34, 729}));
  EXPECT_EQ(tok_->token_bytes(729), "128");
  // "Explain" starts the text64 prompt as E, x, pl, ain.
  EXPECT_EQ(tok_->encode("Explain"), (std::vector<int32_t>{71, 122, 475, 554}));
  // "    int" is "   " then " int": the last space joins the word.
  std::vector<int32_t> ids = tok_->encode("    int");
  std::vector<int32_t> head = tok_->encode("   ");
  std::vector<int32_t> tail = tok_->encode(" int");
  std::vector<int32_t> joined = head;
  joined.insert(joined.end(), tail.begin(), tail.end());
  EXPECT_EQ(ids, joined);
  EXPECT_EQ(tok_->decode(tail), " int");
  EXPECT_EQ(tok_->decode(ids), "    int");
}

TEST_F(TinyVocab, SpecialStringsMatchOnlyInEncode) {
  const std::string s = "a</think>b｜DSML｜<tool_result>";
  std::vector<int32_t> with = tok_->encode(s);
  std::vector<int32_t> raw = tok_->encode_raw(s);
  EXPECT_EQ(std::count(with.begin(), with.end(), 1022), 1);
  EXPECT_EQ(std::count(with.begin(), with.end(), 1023), 1);
  for (int32_t id : raw) EXPECT_LT(id, 1019) << "encode_raw produced a special id";
  EXPECT_EQ(tok_->decode(with), s);
  EXPECT_EQ(tok_->decode(raw), s);
  // "</｜DSML｜" is "</" then the DSML token.
  std::vector<int32_t> dsml_close = tok_->encode("</｜DSML｜");
  ASSERT_GE(dsml_close.size(), 2u);
  EXPECT_EQ(dsml_close.back(), 1023);
  EXPECT_EQ(tok_->decode(std::span(dsml_close).first(dsml_close.size() - 1)), "</");
}

TEST_F(TinyVocab, OutOfRangeIdsThrow) {
  EXPECT_THROW(tok_->token_bytes(1024), std::out_of_range);
  EXPECT_THROW(tok_->token_bytes(-1), std::out_of_range);
  std::vector<int32_t> bad{0, 5000};
  EXPECT_THROW(tok_->decode(bad), std::out_of_range);
}

}  // namespace
}  // namespace ds4::tokenizer
