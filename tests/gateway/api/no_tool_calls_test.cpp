// A turn without tools (none declared, or tool_choice "none") never calls one, in all three chat
// APIs: the policy refuses every token that would bring the DSML marker into the content, the
// output parser looks for no block, and whatever is generated is a completed turn in the API's
// own shape (HTTP 200; chat finish_reason stop/length, Anthropic stop_reason end_turn/max_tokens,
// Responses completed/incomplete), never a failure. A stop sequence that ends the output inside
// a tool call (with tools) is a stop too, never an error.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <limits>

#include "gateway/serving/no_tool_calls_policy.hpp"
#include "gateway/serving/token_choice.hpp"
#include "tests/gateway/api/sse_events.hpp"
#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

// A complete, well-formed call to a tool the request never declared.
const std::string kDsmlReply =
    "Sure.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

TEST(NoToolCallsPolicy, RefusesTheMarkerInContentOnly) {
  serving::NoToolCallsPolicy thinking(true);
  EXPECT_FALSE(thinking.refuses("plan: <｜DSML｜tool_calls>"));  // reasoning: never a call
  thinking.accepted(0, "plan: <｜DS");
  EXPECT_FALSE(thinking.refuses("ML｜"));
  EXPECT_TRUE(thinking.refuses("x</think>ok <｜DSML｜"));  // the same token closes reasoning
  thinking.accepted(0, "</think>Sure <");
  EXPECT_FALSE(thinking.refuses("tool_calls>"));  // plain XML is content, not a call
  EXPECT_TRUE(thinking.refuses("｜DSML｜"));
  EXPECT_TRUE(thinking.refuses("DSML｜"));  // the short spelling "<DSML｜tool_calls>"
  thinking.accepted(0, "｜DS");
  EXPECT_TRUE(thinking.refuses("ML｜"));  // split across tokens
  EXPECT_FALSE(thinking.refuses("ML"));
}

TEST(NoToolCallsPolicy, NextTokenTakesTheBestTokenItDoesNotRefuse) {
  ScriptedBackend backend("");
  serving::NoToolCallsPolicy policy(false);
  policy.accepted(0, "<｜DSML");
  std::vector<float> logits(257, 0.0f);
  const std::string bar = "｜";  // three bytes; its last one completes the marker
  logits[static_cast<unsigned char>(bar[2])] = 9;
  logits['x'] = 5;
  auto greedy = [](std::span<const float> l) {
    return static_cast<serving::Token>(std::max_element(l.begin(), l.end()) - l.begin());
  };
  policy.accepted(0, bar.substr(0, 2));
  EXPECT_EQ(serving::next_token(&policy, logits, backend, greedy), 'x');
  // Nothing else left: the first choice stands (the parser still treats it as text).
  std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
  logits[static_cast<unsigned char>(bar[2])] = 1;
  EXPECT_EQ(serving::next_token(&policy, logits, backend, greedy), static_cast<unsigned char>(bar[2]));
}

std::string content_of_chat(const json::value& v) {
  return std::string(v.at("choices").at(0).at("message").at("content").as_string());
}

TEST(NoToolCalls, ChatWithoutToolsNeverReturnsACall) {
  Harness h({}, {}, true, kDsmlReply);
  h.backend->keep_position = true;  // the scripted model goes on with its text after a refusal
  auto c = h.client();
  for (const char* tools : {"", R"(,"tool_choice":"none","tools":[{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])"}) {
    auto r = c.request(verb::post, "/v1/chat/completions",
                       std::string(R"({"thinking":false,"temperature":0,"max_tokens":400)") + tools +
                           R"(,"messages":[{"role":"user","content":"Weather in Paris?"}]})");
    ASSERT_EQ(r.result_int(), 200) << r.body();
    auto v = body_json(r);
    auto& message = v.at("choices").at(0).at("message").as_object();
    EXPECT_FALSE(message.contains("tool_calls") && !message.at("tool_calls").as_array().empty()) << r.body();
    EXPECT_EQ(v.at("choices").at(0).at("finish_reason").as_string(), "stop") << r.body();
    EXPECT_EQ(content_of_chat(v).find("DSML｜"), std::string::npos) << r.body();
    EXPECT_EQ(content_of_chat(v).rfind("Sure.\n\n<", 0), 0u) << r.body();
  }
}

TEST(NoToolCalls, MessagesWithoutToolsIsA200EndTurn) {
  Harness h({}, {}, true, kDsmlReply);
  h.backend->keep_position = true;
  auto c = h.client();
  const std::string body = R"({"model":"m","max_tokens":400,"temperature":0,"thinking":{"type":"disabled"},)"
                           R"("messages":[{"role":"user","content":"hi #105"}]})";
  auto r = c.request(verb::post, "/v1/messages", body);
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("stop_reason").as_string(), "end_turn") << r.body();
  for (const auto& block : v.at("content").as_array()) EXPECT_EQ(block.at("type").as_string(), "text") << r.body();

  std::string streamed = body;
  streamed.insert(streamed.size() - 1, R"(,"stream":true)");
  r = c.request(verb::post, "/v1/messages", streamed);
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto names = sse_names(sse_events(r.body()));
  EXPECT_EQ(std::count(names.begin(), names.end(), "error"), 0) << r.body();
  EXPECT_EQ(r.body().find("tool_use"), std::string::npos) << r.body();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "message_stop") << r.body();
}

TEST(NoToolCalls, ResponsesWithoutToolsIsCompletedWithoutFunctionCalls) {
  Harness h({}, {}, true, kDsmlReply);
  h.backend->keep_position = true;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/responses",
                     R"({"reasoning":{"effort":"none"},"temperature":0,"max_output_tokens":400,"input":"Weather?"})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("status").as_string(), "completed") << r.body();
  for (const auto& item : v.at("output").as_array()) EXPECT_NE(item.at("type").as_string(), "function_call");
}

// With tools, a client stop sequence that falls inside the call: the call is left out, and the
// turn is a stop (Anthropic: stop_sequence), not chat "error" or an Anthropic 500.
TEST(NoToolCalls, AStopSequenceInsideACallIsAStopNotAnError) {
  Harness h({}, {}, true, kDsmlReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions",
                     R"({"thinking":false,"stop":["Paris"],"tools":[{"type":"function","function":{"name":"get_weather",
          "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
          "messages":[{"role":"user","content":"Weather?"}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("choices").at(0).at("finish_reason").as_string(), "stop") << r.body();
  EXPECT_TRUE(!v.at("choices").at(0).at("message").as_object().contains("tool_calls") ||
              v.at("choices").at(0).at("message").at("tool_calls").as_array().empty())
      << r.body();
  r = c.request(verb::post, "/v1/messages",
                R"({"max_tokens":200,"thinking":{"type":"disabled"},"stop_sequences":["Paris"],
                    "tools":[{"name":"get_weather","input_schema":{"type":"object",
                    "properties":{"city":{"type":"string"}}}}],"messages":[{"role":"user","content":"Weather?"}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  v = body_json(r);
  EXPECT_EQ(v.at("stop_reason").as_string(), "stop_sequence") << r.body();
  for (const auto& block : v.at("content").as_array()) EXPECT_EQ(block.at("type").as_string(), "text") << r.body();
}

}  // namespace
}  // namespace ds4::test
