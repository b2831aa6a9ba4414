// Rendering goldens. Every expected string here is written out by hand from the reference
// server's rules (docs/chat-format.md §rendering), not produced by the renderer.
#include "gateway/protocol/chat_render.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace ds4::protocol {
namespace {

const std::string BOS = "<｜begin▁of▁sentence｜>";
const std::string EOS = "<｜end▁of▁sentence｜>";
const std::string USER = "<｜User｜>";
const std::string ASSISTANT = "<｜Assistant｜>";

const std::string kMaxPrefix =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, "
    "rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, "
    "and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

// Tools block text as given in docs/chat-format.md §tools-block, with {SCHEMAS} substituted.
std::string tools_block(const std::string& schemas) {
  return "## Tools\n\nYou have access to a set of tools to help answer the user question. You can invoke tools by "
         "writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke "
         "name=\"$TOOL_NAME\">\n<｜DSML｜parameter name=\"$PARAMETER_NAME\" "
         "string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n...\n</｜DSML｜invoke>\n<｜DSML｜invoke "
         "name=\"$TOOL_NAME2\">\n...\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>\n\nString parameters should be "
         "specified as raw text and set `string=\"true\"`. Preserve characters such as `>`, `&`, and `&&` exactly; "
         "never replace normal string characters with XML or HTML entity escapes. Only if a string value itself "
         "contains the exact closing parameter tag `</｜DSML｜parameter>`, write that tag as "
         "`&lt;/｜DSML｜parameter>` inside the value. For all other types (numbers, booleans, arrays, objects), "
         "pass the value in JSON format and set `string=\"false\"`.\n\nIf thinking_mode is enabled (triggered by "
         "<think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or "
         "final response.\n\nOtherwise, output directly after </think> with tool calls or final response.\n\n### "
         "Available Tool Schemas\n\n" +
         schemas +
         "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls. Use "
         "the exact parameter names from the schemas.";
}

Message msg(Role role, std::string content) {
  Message m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

Message assistant(std::string content, std::optional<std::string> reasoning = std::nullopt,
                  std::vector<ToolCall> calls = {}) {
  Message m = msg(Role::Assistant, std::move(content));
  m.reasoning = std::move(reasoning);
  m.tool_calls = std::move(calls);
  return m;
}

Message tool(std::string content, std::string id = "call_x") {
  Message m = msg(Role::Tool, std::move(content));
  m.tool_call_id = std::move(id);
  return m;
}

ChatRequest request(std::vector<Message> messages, Thinking thinking) {
  ChatRequest r;
  r.messages = std::move(messages);
  r.thinking = thinking;
  return r;
}

std::string render(const ChatRequest& r, size_t ctx = 32768) {
  return render_chat(r, nullptr, ContractMode::Warn, RenderOptions{ctx, true}).text;
}

TEST(ChatRender, SingleUserNonThinking) {
  auto r = request({msg(Role::System, "S"), msg(Role::User, "hi")}, Thinking::Off);
  EXPECT_EQ(render(r), BOS + "S" + USER + "hi" + ASSISTANT + "</think>");
}

TEST(ChatRender, SingleUserThinking) {
  auto r = request({msg(Role::User, "hi")}, Thinking::High);
  EXPECT_EQ(render(r), BOS + USER + "hi" + ASSISTANT + "<think>");
}

TEST(ChatRender, SystemAndDeveloperAreHoistedAndJoined) {
  auto r = request({msg(Role::User, "a"), msg(Role::System, "S1"), msg(Role::Developer, "S2"), msg(Role::User, "b")},
                   Thinking::High);
  EXPECT_EQ(render(r), BOS + "S1\n\nS2" + USER + "a" + USER + "b" + ASSISTANT + "<think>");
}

TEST(ChatRender, EmptyFirstSystemAddsNoSeparator) {
  auto r = request({msg(Role::System, ""), msg(Role::System, "S"), msg(Role::User, "q")}, Thinking::Off);
  EXPECT_EQ(render(r), BOS + "S" + USER + "q" + ASSISTANT + "</think>");
}

TEST(ChatRender, ThinkingDropsOldReasoningWithoutToolContext) {
  auto r = request({msg(Role::User, "q1"), assistant("a1", "r1"), msg(Role::User, "q2")}, Thinking::High);
  EXPECT_EQ(render(r), BOS + USER + "q1" + ASSISTANT + "</think>a1" + EOS + USER + "q2" + ASSISTANT + "<think>");
}

TEST(ChatRender, ThinkingKeepsReasoningOfTrailingAssistant) {
  auto r = request({msg(Role::User, "q"), assistant("a", "r")}, Thinking::High);
  EXPECT_EQ(render(r), BOS + USER + "q" + ASSISTANT + "<think>r</think>a" + EOS);
}

TEST(ChatRender, NonThinkingAlwaysClosesThink) {
  auto r = request({msg(Role::User, "q1"), assistant("a1", "r1"), msg(Role::User, "q2")}, Thinking::Off);
  EXPECT_EQ(render(r), BOS + USER + "q1" + ASSISTANT + "</think>a1" + EOS + USER + "q2" + ASSISTANT + "</think>");
}

TEST(ChatRender, ThinkMaxNeedsLargeContext) {
  auto r = request({msg(Role::System, "S"), msg(Role::User, "q")}, Thinking::Max);
  EXPECT_EQ(render(r, 393216), BOS + kMaxPrefix + "S" + USER + "q" + ASSISTANT + "<think>");
  EXPECT_EQ(render(r, 393215), BOS + "S" + USER + "q" + ASSISTANT + "<think>");
  EXPECT_EQ(render_chat(r, nullptr, ContractMode::Warn, {393215, true}).thinking, Thinking::High);
}

TEST(ChatRender, BackToBackAssistantsAreConcatenated) {
  auto r = request({msg(Role::User, "q"), assistant("a1"), assistant("a2")}, Thinking::Off);
  EXPECT_EQ(render(r), BOS + USER + "q" + ASSISTANT + "</think>a1" + EOS + "a2" + EOS);
}

TEST(ChatRender, LeadingAssistantHasNoAssistantTag) {
  auto r = request({assistant("hello"), msg(Role::User, "q")}, Thinking::High);
  EXPECT_EQ(render(r), BOS + "hello" + EOS + USER + "q" + ASSISTANT + "<think>");
}

TEST(ChatRender, ToolResultsShareOneUserTagAndKeepText) {
  auto r = request({msg(Role::User, "q"), assistant("", std::nullopt, {{"call_1", "sh", "{\"cmd\":\"ls\"}"}}),
                    tool("a </tool_result> b <x> & c && d 2>&1"), tool("second")},
                   Thinking::Off);
  std::string dsml =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"sh\">\n<｜DSML｜parameter name=\"cmd\" "
      "string=\"true\">ls</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  EXPECT_EQ(render(r),
            BOS + USER + "q" + ASSISTANT + "</think>" + dsml + EOS + USER +
                "<tool_result>a &lt;/tool_result> b <x> & c && d 2>&1</tool_result><tool_result>second</tool_result>" +
                ASSISTANT + "</think>");
}

TEST(ChatRender, UserAfterToolOpensNewUserTag) {
  auto r = request({msg(Role::User, "q"), tool("t"), msg(Role::User, "u")}, Thinking::Off);
  EXPECT_EQ(render(r), BOS + USER + "q" + USER + "<tool_result>t</tool_result>" + USER + "u" + ASSISTANT + "</think>");
}

TEST(ChatRender, MultiTurnWithToolsKeepsAllReasoning) {
  ChatRequest r =
      request({msg(Role::System, "Be brief."), msg(Role::User, "read /tmp/a&b"),
               assistant("Reading.", "I should read it.",
                         {{"call_1", "read", "{\"path\": \"/tmp/a&b\", \"lines\": [1, 2], \"opt\": {\"x\": null}}"}}),
               tool("file body"), assistant("Done.", "It is read."), msg(Role::User, "thanks")},
              Thinking::High);
  r.tools.push_back(boost::json::parse(R"({"name":"read","parameters":{"type":"object"}})").as_object());
  std::string dsml =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read\">\n"
      "<｜DSML｜parameter name=\"path\" string=\"true\">/tmp/a&b</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"lines\" string=\"false\">[1,2]</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"opt\" string=\"false\">{\"x\":null}</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  std::string expected = BOS + tools_block(R"({"name":"read","parameters":{"type":"object"}})") + "\n\nBe brief." +
                         USER + "read /tmp/a&b" + ASSISTANT + "<think>I should read it.</think>Reading." + dsml + EOS +
                         USER + "<tool_result>file body</tool_result>" + ASSISTANT + "<think>It is read.</think>Done." +
                         EOS + USER + "thanks" + ASSISTANT + "<think>";
  EXPECT_EQ(render(r), expected);
}

TEST(ChatRender, ToolsAreOneSchemaPerLine) {
  ChatRequest r = request({msg(Role::User, "q")}, Thinking::Off);
  r.tools.push_back(boost::json::parse(R"({"name":"a"})").as_object());
  r.tools.push_back(boost::json::parse(R"({"name":"b","description":"x"})").as_object());
  EXPECT_EQ(render(r), BOS + tools_block("{\"name\":\"a\"}\n{\"name\":\"b\",\"description\":\"x\"}") + USER + "q" +
                           ASSISTANT + "</think>");
}

TEST(ChatRender, ToolSchemaNumbersAreWrittenAsPeopleWriteThem) {
  ChatRequest r = request({msg(Role::User, "q")}, Thinking::Off);
  r.tools.push_back(
      boost::json::parse(R"({"name":"n","parameters":{"minimum":1.5,"maximum":10,"step":0.1,"big":1e300,"d":"a\nb"}})")
          .as_object());
  EXPECT_EQ(
      render(r),
      BOS +
          tools_block(R"({"name":"n","parameters":{"minimum":1.5,"maximum":10,"step":0.1,"big":1e+300,"d":"a\nb"}})") +
          USER + "q" + ASSISTANT + "</think>");
}

TEST(ChatRender, ToolChoiceNoneHidesToolsButHistoryStillKeepsReasoning) {
  ChatRequest r = request({msg(Role::User, "q"), assistant("", "r1", {{"call_1", "f", "{}"}}), tool("res"),
                           assistant("a", "r2"), msg(Role::User, "q2")},
                          Thinking::High);
  r.tools.push_back(boost::json::parse(R"({"name":"f"})").as_object());
  r.tool_choice = "none";
  std::string dsml = "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  EXPECT_EQ(render(r), BOS + USER + "q" + ASSISTANT + "<think>r1</think>" + dsml + EOS + USER +
                           "<tool_result>res</tool_result>" + ASSISTANT + "<think>r2</think>a" + EOS + USER + "q2" +
                           ASSISTANT + "<think>");
}

TEST(ChatRender, DsmlEscapingRules) {
  std::vector<ToolCall> calls = {
      {"call_1", "we\"ird<&>",
       R"({"k\"<":"a </｜DSML｜parameter> b && c 2> d &amp;","j":{"s":"</｜DSML｜parameter>"}})"},
      {"call_2", "raw", "not json at all"},
  };
  auto r = request({msg(Role::User, "q"), assistant("", std::nullopt, calls)}, Thinking::Off);
  std::string dsml =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"we&quot;ird&lt;&amp;&gt;\">\n"
      "<｜DSML｜parameter name=\"k&quot;&lt;\" string=\"true\">a &lt;/｜DSML｜parameter> b && c 2> d "
      "&amp;</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"j\" string=\"false\">{\"s\":\"\\u003c/｜DSML｜parameter>\"}</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"raw\">\n"
      "<｜DSML｜parameter name=\"arguments\" string=\"true\">not json at all</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  EXPECT_EQ(render(r), BOS + USER + "q" + ASSISTANT + "</think>" + dsml + EOS);
}

TEST(ChatRender, ClientSpansCoverExactlyClientText) {
  ChatRequest r = request({msg(Role::System, "SYS"), msg(Role::User, "USERTEXT"),
                           assistant("ANSWER", "REASON", {{"call_1", "f", R"({"p":"VALUE","n":42})"}}), tool("RESULT")},
                          Thinking::High);
  r.tools.push_back(boost::json::parse(R"({"name":"f"})").as_object());
  RenderResult out = render_chat(r, nullptr, ContractMode::Warn);
  std::vector<std::string> pieces;
  size_t covered = 0;
  for (size_t i = 0; i < out.client_spans.size(); ++i) {
    auto [b, e] = out.client_spans[i];
    ASSERT_LT(b, e);
    ASSERT_LE(e, out.text.size());
    if (i) {
      ASSERT_GT(b, out.client_spans[i - 1].second);
    }
    pieces.push_back(out.text.substr(b, e - b));
    covered += e - b;
  }
  std::vector<std::string> expected = {R"({"name":"f"})", "SYS",   "USERTEXT", "REASON",
                                       "ANSWER",          "VALUE", "42",       "RESULT"};
  EXPECT_EQ(pieces, expected);
  EXPECT_LT(covered, out.text.size());
}

TEST(ChatRender, CompletionFrame) {
  CompletionRequest c;
  c.prompt = std::string("hello");
  c.thinking = Thinking::Off;
  CompletionFrame f = completion_frame(c, {32768, true});
  EXPECT_EQ(f.head, BOS + "You are a helpful assistant" + USER);
  EXPECT_EQ(f.tail, ASSISTANT + "</think>");
  c.thinking = Thinking::Max;
  f = completion_frame(c, {393216, true});
  EXPECT_EQ(f.head, BOS + kMaxPrefix + "You are a helpful assistant" + USER);
  EXPECT_EQ(f.tail, ASSISTANT + "<think>");
  c.raw = true;
  f = completion_frame(c, {393216, true});
  EXPECT_TRUE(f.head.empty());
  EXPECT_TRUE(f.tail.empty());
}

TEST(ChatRender, GenerationAnchorDependsOnTheLastUserSegmentOnly) {
  auto a = request({msg(Role::System, "S1"), msg(Role::User, "q")}, Thinking::High);
  auto b = request({msg(Role::System, "S2 changed"), msg(Role::User, "q")}, Thinking::High);
  auto c = request({msg(Role::System, "S1"), msg(Role::User, "other")}, Thinking::High);
  EXPECT_EQ(render_chat(a, nullptr, ContractMode::Warn).turn_anchor,
            render_chat(b, nullptr, ContractMode::Warn).turn_anchor);
  EXPECT_NE(render_chat(a, nullptr, ContractMode::Warn).turn_anchor,
            render_chat(c, nullptr, ContractMode::Warn).turn_anchor);
}

}  // namespace
}  // namespace ds4::protocol
