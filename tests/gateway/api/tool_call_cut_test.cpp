// A tool call cut by max_tokens, in all three chat APIs, streamed and not: the turn ends as a
// length stop (chat finish_reason "length", Anthropic stop_reason "max_tokens", Responses status
// "incomplete" with incomplete_details.reason "max_output_tokens"), never as a failure, and the
// unclosed call is not given out as a call (non-streamed: absent; Responses stream: no
// output_item.done for it). Calls closed before the cut are kept. The model itself ending its
// output inside a call (EOS) is not taken: the output goes on, here to the max_tokens cut.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/gateway/api/sse_events.hpp"
#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

// Two calls; the cut falls inside the second one's parameter value.
const std::string kHead =
    "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Lon";
const std::string kReply = kHead + "don</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
// The scripted engine's tokens are bytes: this many tokens stop inside "London".
const std::string kMax = std::to_string(kHead.size());

const char* kTools =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string"}}}}}])";
const char* kAnthropicTools =
    R"([{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}])";
const char* kResponsesTools =
    R"([{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}])";

std::string chat_body(bool stream, const std::string& max = kMax) {
  return std::string(R"({"thinking":false,"max_tokens":)") + max + R"(,"stream":)" + (stream ? "true" : "false") +
         R"(,"tools":)" + kTools + R"(,"messages":[{"role":"user","content":"Weather in Paris and London?"}]})";
}
std::string messages_body(bool stream) {
  return std::string(R"({"thinking":{"type":"disabled"},"max_tokens":)") + kMax + R"(,"stream":)" +
         (stream ? "true" : "false") + R"(,"tools":)" + kAnthropicTools +
         R"(,"messages":[{"role":"user","content":"Weather in Paris and London?"}]})";
}
std::string responses_body(bool stream) {
  return std::string(R"({"reasoning":{"effort":"none"},"max_output_tokens":)") + kMax + R"(,"stream":)" +
         (stream ? "true" : "false") + R"(,"tools":)" + kResponsesTools + R"(,"input":"Weather in Paris and London?"})";
}

TEST(ToolCallCut, ChatIsALengthStopWithOnlyTheClosedCall) {
  Harness h({}, {}, true, kReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", chat_body(false));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto choice = body_json(r).at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length") << r.body();
  auto& calls = choice.at("message").at("tool_calls").as_array();
  ASSERT_EQ(calls.size(), 1u) << r.body();
  EXPECT_EQ(calls[0].at("function").at("arguments").as_string(), R"({"city":"Paris"})");
  EXPECT_EQ(choice.at("message").at("content").as_string(), "Checking.");

  r = c.request(verb::post, "/v1/chat/completions", chat_body(true));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  std::string finish;
  for (const auto& e : sse_events(r.body())) {
    auto& choices = e.data.at("choices").as_array();
    if (!choices.empty() && choices[0].at("finish_reason").is_string())
      finish = choices[0].at("finish_reason").as_string();
  }
  EXPECT_EQ(finish, "length") << r.body();
}

TEST(ToolCallCut, ModelEndingInsideACallGoesOnToTheLimit) {
  // The script ends (EOS) inside the second call. That EOS is not taken (it would leave a call
  // that cannot run); the output goes on to max_tokens.
  Harness h({}, {}, true, kHead);
  auto c = h.client();
  const std::string max = std::to_string(kHead.size() + 8);
  auto r = c.request(verb::post, "/v1/chat/completions", chat_body(false, max));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto choice = body_json(r).at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length") << r.body();
  EXPECT_EQ(choice.at("message").at("tool_calls").as_array().size(), 1u) << r.body();
  r = c.request(verb::post, "/v1/messages",
                std::string(R"({"thinking":{"type":"disabled"},"max_tokens":)") + max + R"(,"tools":)" +
                    kAnthropicTools + R"(,"messages":[{"role":"user","content":"Weather?"}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("stop_reason").as_string(), "max_tokens") << r.body();
}

TEST(ToolCallCut, MessagesIsStopReasonMaxTokens) {
  Harness h({}, {}, true, kReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/messages", messages_body(false));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("stop_reason").as_string(), "max_tokens") << r.body();
  std::vector<std::string> types;
  for (const auto& block : v.at("content").as_array()) types.emplace_back(block.at("type").as_string());
  EXPECT_EQ(types, (std::vector<std::string>{"text", "tool_use"})) << r.body();
  EXPECT_EQ(v.at("content").at(1).at("input"), json::parse(R"({"city":"Paris"})"));

  r = c.request(verb::post, "/v1/messages", messages_body(true));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto events = sse_events(r.body());
  auto n = sse_names(events);
  ASSERT_GE(n.size(), 3u) << r.body();
  EXPECT_EQ(std::count(n.begin(), n.end(), "error"), 0) << r.body();
  EXPECT_EQ(n.back(), "message_stop") << r.body();
  EXPECT_EQ(events[events.size() - 2].data.at("delta").at("stop_reason").as_string(), "max_tokens") << r.body();
  // Every block that started was stopped, the cut one included: a well-formed stream.
  EXPECT_EQ(std::count(n.begin(), n.end(), "content_block_start"),
            std::count(n.begin(), n.end(), "content_block_stop"));
}

TEST(ToolCallCut, ResponsesIsIncompleteAndTheCutCallIsNeverDone) {
  Harness h({}, {}, true, kReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/responses", responses_body(false));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("status").as_string(), "incomplete") << r.body();
  EXPECT_EQ(v.at("incomplete_details").at("reason").as_string(), "max_output_tokens");
  EXPECT_TRUE(v.at("error").is_null()) << r.body();
  auto& output = v.at("output").as_array();
  ASSERT_EQ(output.size(), 2u) << r.body();
  EXPECT_EQ(output[1].at("type").as_string(), "function_call");
  EXPECT_EQ(output[1].at("arguments").as_string(), R"({"city":"Paris"})");

  r = c.request(verb::post, "/v1/responses", responses_body(true));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto events = sse_events(r.body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "response.incomplete") << r.body();
  size_t calls_added = 0, calls_done = 0;
  for (const auto& e : events) {
    if (!e.data.as_object().contains("item")) continue;
    if (e.data.at("item").at("type") != "function_call") continue;
    if (e.name == "response.output_item.added") ++calls_added;
    if (e.name == "response.output_item.done") {
      ++calls_done;
      EXPECT_EQ(e.data.at("item").at("arguments").as_string(), R"({"city":"Paris"})");
    }
  }
  EXPECT_EQ(calls_added, 2u) << r.body();  // the cut call was announced as it began...
  EXPECT_EQ(calls_done, 1u) << r.body();   // ...and never finished
  auto& final_output = events.back().data.at("response").at("output").as_array();
  EXPECT_EQ(final_output.size(), 2u) << r.body();
}

}  // namespace
}  // namespace ds4::test
