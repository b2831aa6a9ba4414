// The streaming output parser: every accepted DSML spelling, reasoning/content separation,
// hold-back of partial tags, errors, and split invariance (one byte at a time == whole).
#include "gateway/protocol/dsml_parser.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "gateway/protocol/dsml_format.hpp"
#include "gateway/protocol/json_scan.hpp"
#include "test_support.hpp"

namespace ds4::protocol {
namespace {

using test::normalize;
using test::parse_bytewise;
using test::parse_whole;

std::string id(int n) {
  std::string d = std::to_string(n);
  return "call_" + std::string(32 - d.size(), '0') + d;
}

ParsedMessage parse_message(std::string_view text, bool thinking) {
  OutputParser p(thinking, test::counting_ids());
  p.feed(text);
  p.finish();
  return p.message();
}

const std::string kFullBlock =
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read_file\">\n"
    "<｜DSML｜parameter name=\"path\" string=\"true\">/tmp/a &amp;&& b &lt;/｜DSML｜parameter> "
    "\"q\"</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"opts\" string=\"false\">{ \"n\": [1, 2],\n \"s\": \"a b\" }</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"two\">\n"
    "<｜DSML｜parameter name=\"x\" string=\"false\"></｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

TEST(DsmlParser, PlainContentWithoutThinking) {
  auto m = parse_message("Hello, world.\n", false);
  EXPECT_EQ(m.content, "Hello, world.\n");  // no block: trailing whitespace is content
  EXPECT_FALSE(m.reasoning.has_value());
  EXPECT_EQ(m.status, ToolCallsStatus::None);
}

TEST(DsmlParser, ReasoningThenContent) {
  auto events = normalize(parse_whole("Let me think.</think>The answer is 4.", true));
  EXPECT_EQ(events, (std::vector<std::string>{"reasoning: Let me think.", "content: The answer is 4."}));
  auto m = parse_message("Let me think.</think>The answer is 4.", true);
  EXPECT_EQ(*m.reasoning, "Let me think.");
  EXPECT_TRUE(m.thinking_closed);
}

TEST(DsmlParser, LeadingThinkTagOpensReasoningInNonThinkingPrompt) {
  auto m = parse_message("<think>hmm</think>ok", false);
  EXPECT_EQ(*m.reasoning, "hmm");
  EXPECT_EQ(m.content, "ok");
}

TEST(DsmlParser, UnclosedReasoningStaysReasoning) {
  auto m = parse_message("still thinking </thi", true);
  EXPECT_EQ(*m.reasoning, "still thinking </thi");
  EXPECT_FALSE(m.thinking_closed);
  EXPECT_EQ(m.content, "");
}

TEST(DsmlParser, FullDsmlBlock) {
  std::string text = "plan</think>I'll read it." + kFullBlock;
  auto events = normalize(parse_whole(text, true));
  std::string args0 = R"({"path":"/tmp/a &&& b </｜DSML｜parameter> \"q\"","opts":{"n":[1,2],"s":"a b"}})";
  std::string invoke0 =
      kFullBlock.substr(kFullBlock.find("<｜DSML｜invoke"), kFullBlock.find("</｜DSML｜invoke>") +
                                                                std::string("</｜DSML｜invoke>").size() -
                                                                kFullBlock.find("<｜DSML｜invoke"));
  ASSERT_EQ(events.size(), 9u);
  EXPECT_EQ(events[0], "reasoning: plan");
  EXPECT_EQ(events[1], "content: I'll read it.");
  EXPECT_EQ(events[2], "begin 0 " + id(1) + " read_file");
  EXPECT_EQ(events[3], "args0: " + args0);
  EXPECT_EQ(events[4], "end 0 " + args0 + " | " + invoke0);
  EXPECT_EQ(events[5], "begin 1 " + id(2) + " two");
  EXPECT_EQ(events[6], R"(args1: {"x":null})");
  EXPECT_EQ(events[8], "done " + kFullBlock);

  auto m = parse_message(text, true);
  EXPECT_EQ(m.status, ToolCallsStatus::Complete);
  EXPECT_EQ(m.content, "I'll read it.");
  EXPECT_EQ(m.dsml_block, kFullBlock);
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].arguments_json, args0);
  EXPECT_TRUE(m.calls[0].arguments_valid);
  EXPECT_EQ(m.calls[1].arguments_json, R"({"x":null})");
}

TEST(DsmlParser, ShortAndPlainSpellings) {
  std::string short_block =
      "\n\n<DSML｜tool_calls>\n<DSML｜invoke name=\"f\">\n<DSML｜parameter name=\"a\" "
      "string=\"true\">1</DSML｜parameter>\n</DSML｜invoke>\n</DSML｜tool_calls>";
  std::string plain_block =
      "<tool_calls><invoke name=\"f\"><parameter name=\"a\" string=\"true\">1</parameter></invoke></tool_calls>";
  for (const auto& block : {short_block, plain_block}) {
    auto m = parse_message("x</think>text " + block, true);
    EXPECT_EQ(m.status, ToolCallsStatus::Complete) << block;
    ASSERT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(m.calls[0].name, "f");
    EXPECT_EQ(m.calls[0].arguments_json, R"({"a":"1"})");
    EXPECT_EQ(m.content, "text");
    EXPECT_EQ(m.dsml_block, " " + block);  // all whitespace after the content is the block's
  }
}

TEST(DsmlParser, ContentPlusBlockIsExactlyTheSampledText) {
  for (std::string ws : {"", "\n", "\n\n", " \n\n\n\n", "\t "}) {
    std::string after_think = "Answer:" + ws + kFullBlock.substr(2);
    auto m = parse_message("r</think>" + after_think, true);
    ASSERT_EQ(m.status, ToolCallsStatus::Complete);
    EXPECT_EQ(m.content, "Answer:");
    EXPECT_EQ(m.content + m.dsml_block, after_think);
  }
}

TEST(DsmlParser, BlockRightAfterThinkClose) {
  auto m = parse_message("r</think>" + kFullBlock, true);
  EXPECT_EQ(m.content, "");
  EXPECT_EQ(m.dsml_block, kFullBlock);
}

TEST(DsmlParser, DsmlInsideReasoningIsNotACall) {
  std::string text = "I could call" + kFullBlock + " but I won't.</think>Just text.";
  auto m = parse_message(text, true);
  EXPECT_EQ(m.status, ToolCallsStatus::None);
  EXPECT_TRUE(m.calls.empty());
  EXPECT_EQ(*m.reasoning, "I could call" + kFullBlock + " but I won't.");
  EXPECT_EQ(m.content, "Just text.");
}

TEST(DsmlParser, MissingStringAttributeIsStringAndLooseNestedParametersBecomeAnObject) {
  std::string block =
      "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\">"
      "<｜DSML｜parameter name=\"s\">  plain &amp; text</｜DSML｜parameter>"
      "<｜DSML｜parameter name=\"obj\">\n<｜DSML｜parameter name=\"k\" string=\"true\">v</｜DSML｜parameter>"
      "<｜DSML｜parameter name=\"n\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜parameter>"
      "</｜DSML｜invoke></｜DSML｜tool_calls>";
  auto m = parse_message(block, false);
  ASSERT_EQ(m.status, ToolCallsStatus::Complete);
  EXPECT_EQ(m.calls[0].arguments_json, R"({"s":"  plain & text","obj":{"k":"v","n":3}})");
  EXPECT_EQ(normalize(parse_whole(block, false)), normalize(parse_bytewise(block, false)));
}

TEST(DsmlParser, InvalidJsonValueIsFlagged) {
  std::string block =
      "<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"n\" string=\"false\">not json"
      "</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>";
  auto m = parse_message(block, false);
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_FALSE(m.calls[0].arguments_valid);
  EXPECT_EQ(m.calls[0].arguments_json, R"({"n":notjson})");
}

TEST(DsmlParser, MalformedBlockBecomesContent) {
  std::string text = "Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜oops name=\"f\">";
  auto events = parse_whole(text, false);
  auto m = parse_message(text, false);
  EXPECT_EQ(m.status, ToolCallsStatus::Malformed);
  EXPECT_TRUE(m.calls.empty());
  EXPECT_EQ(m.content, text);  // everything the model wrote reaches the client
  EXPECT_EQ(normalize(events), normalize(parse_bytewise(text, false)));
  bool saw_error = false;
  for (const auto& e : events)
    if (auto* er = std::get_if<ToolCallsError>(&e)) saw_error = er->status == ToolCallsStatus::Malformed;
  EXPECT_TRUE(saw_error);
}

TEST(DsmlParser, UnterminatedBlockIsReportedAtFinish) {
  std::string text =
      "x</think>ok\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" "
      "string=\"true\">par";
  OutputParser p(true, test::counting_ids());
  p.feed(text);
  EXPECT_TRUE(p.in_tool_calls());
  auto events = p.finish();
  ASSERT_FALSE(events.empty());
  auto* er = std::get_if<ToolCallsError>(&events.back());
  ASSERT_NE(er, nullptr);
  EXPECT_EQ(er->status, ToolCallsStatus::Unterminated);
  EXPECT_EQ(p.message().status, ToolCallsStatus::Unterminated);
  EXPECT_EQ(p.message().content, "ok");
}

TEST(DsmlParser, TextAfterBlockIsIgnoredAndDoneIsSignalled) {
  OutputParser p(false, test::counting_ids());
  p.feed("<tool_calls><invoke name=\"f\"></invoke></tool_calls>");
  EXPECT_TRUE(p.tool_calls_done());
  auto events = p.feed("trailing");
  EXPECT_TRUE(events.empty());
  p.finish();
  EXPECT_EQ(p.message().content, "");
  EXPECT_EQ(p.message().calls[0].arguments_json, "{}");
}

TEST(DsmlParser, NeverEmitsAPartialTagOrProtocolWhitespace) {
  OutputParser p(false, test::counting_ids());
  std::string emitted;
  for (std::string piece : {"Hello", " world", "\n", "\n<", "｜DS", "ML｜tool"}) {
    for (const auto& e : p.feed(piece))
      if (auto* c = std::get_if<ContentDelta>(&e)) emitted += c->text;
    EXPECT_EQ(emitted.find('<'), std::string::npos);
  }
  EXPECT_EQ(emitted, "Hello world");
  // If it turns out not to be a tag, the held bytes are released unchanged.
  for (const auto& e : p.feed("_not>"))
    if (auto* c = std::get_if<ContentDelta>(&e)) emitted += c->text;
  EXPECT_EQ(emitted, "Hello world\n\n<｜DSML｜tool_not>");
}

TEST(DsmlParser, ArgumentFragmentsStreamBeforeTheParameterCloses) {
  OutputParser p(false, test::counting_ids());
  p.feed("<｜DSML｜tool_calls><｜DSML｜invoke name=\"w\"><｜DSML｜parameter name=\"body\" string=\"true\">line one\n");
  std::string args;
  for (const auto& e : p.feed("line two &am"))
    if (auto* a = std::get_if<ToolCallArgumentsDelta>(&e)) args += a->fragment;
  EXPECT_EQ(args, "line two ");  // the partial entity is held
  for (const auto& e : p.feed("p; end</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>"))
    if (auto* a = std::get_if<ToolCallArgumentsDelta>(&e)) args += a->fragment;
  EXPECT_EQ(args, "line two & end\"}");
  EXPECT_EQ(p.message().calls[0].arguments_json, "{\"body\":\"line one\\nline two & end\"}");
}

// Every input above, fed one byte at a time and in two pieces at every split point, must
// produce the same normalized events as fed whole.
TEST(DsmlParser, SplitInvariance) {
  const std::vector<std::pair<std::string, bool>> inputs = {
      {"Let me think.</think>The answer is 4.", true},
      {"plan</think>I'll read it." + kFullBlock, true},
      {"I could call" + kFullBlock + " but I won't.</think>Just text.", true},
      {"<think>hmm</think>ok  \n\n", false},
      {"x</think>text \n<DSML｜tool_calls><DSML｜invoke name=\"f\"><DSML｜parameter name=\"a\" string=\"false\">[ 1 "
       "]</DSML｜parameter></DSML｜invoke></DSML｜tool_calls>",
       true},
      {"<tool_calls>\n<invoke name=\"a&amp;b\">\n<parameter name=\"p\">x &lt; y</parameter>\n</invoke>\n</tool_calls>",
       false},
      {"Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜oops name=\"f\">and more", false},
      {"a < b and c <｜ d </think", true},
      {"ünïcödé 🙂 text</think>ünï 🙂" + kFullBlock, true},
  };
  for (const auto& [text, thinking] : inputs) {
    auto whole = normalize(parse_whole(text, thinking));
    EXPECT_EQ(whole, normalize(parse_bytewise(text, thinking))) << text;
    for (size_t cut = 1; cut < text.size(); ++cut) {
      OutputParser p(thinking, test::counting_ids());
      std::vector<Event> events = p.feed(std::string_view(text).substr(0, cut));
      events = test::append(std::move(events), p.feed(std::string_view(text).substr(cut)));
      events = test::append(std::move(events), p.finish());
      ASSERT_EQ(whole, normalize(events)) << "cut at " << cut << " of " << text;
    }
  }
}

TEST(DsmlParser, CanonicalRenderingRoundTrips) {
  std::vector<ToolCall> calls = {
      // (A literal "&amp;" in a string would come back as "&": the model's output is entity-decoded,
      // while rendering keeps strings raw; that asymmetry is ds4's and is kept.)
      {"c1", "edit",
       R"({"path":"/a b/c","text":"x </｜DSML｜parameter> && y > z","n":-1.5e3,"l":[true,null,{"k":"</｜DSML｜parameter>"}]})"},
      {"c2", "noargs", "{}"},
  };
  std::string block;
  dsml::render_tool_calls(calls, block);
  auto m = parse_message("r</think>" + block, true);
  ASSERT_EQ(m.status, ToolCallsStatus::Complete);
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].name, "edit");
  EXPECT_EQ(boost::json::parse(m.calls[0].arguments_json), boost::json::parse(calls[0].arguments));
  EXPECT_EQ(m.calls[1].arguments_json, "{}");
  EXPECT_EQ(m.dsml_block, block);
}

}  // namespace
}  // namespace ds4::protocol
