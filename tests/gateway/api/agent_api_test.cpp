// The agent-client APIs over HTTP on the scripted engine: POST /v1/messages (Anthropic) and
// POST /v1/responses (OpenAI Responses): shapes, the streamed event lifecycles, tool round trips
// replayed exactly by id with a live-context hit, the reasoning echo (thinking blocks,
// encrypted_content), previous_response_id, auth and error shapes.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/gateway/api/sse_events.hpp"
#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

const std::string kToolReply =
    "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
const std::string kThinkReply = "Pondering the greeting.</think>Hello there";
const std::string kThinkToolReply = "Pondering the weather.</think>" + kToolReply;

const char* kAnthropicTools =
    R"([{"name":"get_weather","description":"Weather for a city","input_schema":{"type":"object",
        "properties":{"city":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}])";

// ---- /v1/messages ---------------------------------------------------------------------------

// The request after the get_weather turn: the user's question, the assistant's turn echoed as
// text + tool_use (with `city` as its input), and the tool_result.
json::object weather_round_trip(const std::string& tool_id, const std::string& city, const std::string& result) {
  json::object next =
      json::parse(std::string(R"({"max_tokens":400,"thinking":{"type":"disabled"},"tools":)") + kAnthropicTools + "}")
          .as_object();
  next["messages"] = json::array{
      json::object{{"role", "user"}, {"content", "Weather in Paris?"}},
      json::object{{"role", "assistant"},
                   {"content", json::array{json::object{{"type", "text"}, {"text", "Checking."}},
                                           json::object{{"type", "tool_use"},
                                                        {"id", tool_id},
                                                        {"name", "get_weather"},
                                                        {"input", json::object{{"city", city}}}}}}},
      json::object{{"role", "user"},
                   {"content", json::array{json::object{
                                   {"type", "tool_result"}, {"tool_use_id", tool_id}, {"content", result}}}}}};
  return next;
}

TEST(MessagesApi, NonStreamedTurnWithThinkingBlock) {
  Harness h({}, {}, true, kThinkReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/messages?beta=true",
                     R"({"model":"claude-sonnet","max_tokens":200,"system":[{"type":"text","text":"Be brief.",
                         "cache_control":{"type":"ephemeral"}}],"thinking":{"type":"adaptive"},
                         "output_config":{"effort":"high"},"metadata":{"user_id":"u1"},
                         "context_management":{"edits":[]},
                         "messages":[{"role":"user","content":[{"type":"text","text":"Say hi"}]}]})",
                     {{"anthropic-version", "2023-06-01"}, {"anthropic-beta", "interleaved-thinking-2025-05-14"}});
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("type").as_string(), "message");
  EXPECT_EQ(v.at("role").as_string(), "assistant");
  EXPECT_EQ(v.at("model").as_string(), "claude-sonnet");
  EXPECT_EQ(std::string(v.at("id").as_string()).rfind("msg_", 0), 0u);
  auto& content = v.at("content").as_array();
  ASSERT_EQ(content.size(), 2u) << r.body();
  EXPECT_EQ(content[0].at("type").as_string(), "thinking");
  EXPECT_EQ(content[0].at("thinking").as_string(), "Pondering the greeting.");
  EXPECT_EQ(content[1].at("type").as_string(), "text");
  EXPECT_EQ(content[1].at("text").as_string(), "Hello there");
  EXPECT_EQ(v.at("stop_reason").as_string(), "end_turn");
  EXPECT_TRUE(v.at("stop_sequence").is_null());
  EXPECT_EQ(v.at("usage").at("output_tokens").as_int64(), static_cast<int64_t>(kThinkReply.size()));
  EXPECT_GT(v.at("usage").at("input_tokens").as_int64(), 0);
  EXPECT_EQ(v.at("usage").at("cache_read_input_tokens").as_int64(), 0);
}

// The thinking block sent back is the reasoning echo: sent exactly, no violation and a live
// hit; dropped, the contract reports reasoning_missing (and warn mode repairs it).
TEST(MessagesApi, ThinkingBlockEchoIsTheReasoningContract) {
  Harness h({}, {}, true, kThinkToolReply);
  auto c = h.client();
  auto first = c.request(verb::post, "/v1/messages",
                         std::string(R"({"max_tokens":300,"tools":)") + kAnthropicTools +
                             R"(,"messages":[{"role":"user","content":"Weather in Paris?"}]})");
  ASSERT_EQ(first.result_int(), 200) << first.body();
  json::array content = body_json(first).at("content").as_array();
  ASSERT_EQ(content.size(), 3u) << first.body();
  ASSERT_EQ(content[0].at("type").as_string(), "thinking");
  ASSERT_EQ(content[2].at("type").as_string(), "tool_use");
  std::string id(content[2].at("id").as_string());
  auto echo = [&](const json::array& assistant_content) {
    json::object next = json::parse(std::string(R"({"max_tokens":400,"tools":)") + kAnthropicTools + "}").as_object();
    next["messages"] = json::array{
        json::object{{"role", "user"}, {"content", "Weather in Paris?"}},
        json::object{{"role", "assistant"}, {"content", assistant_content}},
        json::object{{"role", "user"},
                     {"content",
                      json::array{json::object{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "sunny"}}}}}};
    return body_json(c.request(verb::post, "/v1/messages", json::serialize(next)));
  };
  auto v = echo(content);
  EXPECT_TRUE(v.at("ds4d").at("contract").at("violations").as_array().empty()) << json::serialize(v);
  EXPECT_GT(v.at("usage").at("cache_read_input_tokens").as_int64(), 0) << json::serialize(v);
  json::array without_thinking{content[1], content[2]};
  v = echo(without_thinking);
  ASSERT_EQ(v.at("ds4d").at("contract").at("violations").as_array().size(), 1u) << json::serialize(v);
  EXPECT_EQ(v.at("ds4d").at("contract").at("violations").at(0).at("kind").as_string(), "reasoning_missing");
}

TEST(MessagesApi, StreamFollowsTheEventLifecycleWithALiveToolUse) {
  Harness h({}, {}, true, kToolReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/messages",
                     std::string(R"({"max_tokens":200,"stream":true,"thinking":{"type":"disabled"},"tools":)") +
                         kAnthropicTools + R"(,"messages":[{"role":"user","content":"Weather in Paris?"}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(r[bhttp::field::content_type], "text/event-stream");
  auto events = sse_events(r.body());
  auto n = sse_names(events);
  ASSERT_GE(n.size(), 9u) << r.body();
  EXPECT_EQ(n[0], "message_start");
  EXPECT_EQ(n[1], "ping");
  EXPECT_EQ(n[n.size() - 2], "message_delta");
  EXPECT_EQ(n.back(), "message_stop");
  for (const auto& e : events) EXPECT_EQ(e.data.at("type").as_string(), e.name);  // event name == payload type

  std::string text, partial_json, tool_id;
  std::vector<std::string> block_types;
  long open_index = -1;
  for (const auto& e : events) {
    if (e.name == "content_block_start") {
      EXPECT_EQ(open_index, -1) << "a block started before the previous one stopped";
      open_index = e.data.at("index").as_int64();
      EXPECT_EQ(open_index, static_cast<long>(block_types.size()));
      block_types.emplace_back(e.data.at("content_block").at("type").as_string());
      if (block_types.back() == "tool_use") {
        tool_id = std::string(e.data.at("content_block").at("id").as_string());
        EXPECT_EQ(e.data.at("content_block").at("name").as_string(), "get_weather");
      }
    } else if (e.name == "content_block_delta") {
      EXPECT_EQ(e.data.at("index").as_int64(), open_index);
      auto& d = e.data.at("delta");
      if (d.at("type") == "text_delta") text += d.at("text").as_string();
      if (d.at("type") == "input_json_delta") partial_json += d.at("partial_json").as_string();
    } else if (e.name == "content_block_stop") {
      EXPECT_EQ(e.data.at("index").as_int64(), open_index);
      open_index = -1;
    }
  }
  EXPECT_EQ(open_index, -1);
  EXPECT_EQ(block_types, (std::vector<std::string>{"text", "tool_use"}));
  EXPECT_EQ(text, "Checking.");
  EXPECT_EQ(partial_json, R"({"city":"Paris"})");
  auto& delta = events[events.size() - 2].data;
  EXPECT_EQ(delta.at("delta").at("stop_reason").as_string(), "tool_use");
  EXPECT_EQ(delta.at("usage").at("output_tokens").as_int64(), static_cast<int64_t>(kToolReply.size()));

  // The tool round trip: tool_use echoed by id, tool_result in the next user message. The
  // sampled DSML is replayed exactly and the prompt extends the live context.
  r = c.request(verb::post, "/v1/messages", json::serialize(weather_round_trip(tool_id, "Paris", "sunny")));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("ds4d").at("contract").at("replayed_blocks").as_int64(), 1) << r.body();
  EXPECT_GT(v.at("usage").at("cache_read_input_tokens").as_int64(), 0) << r.body();
}

TEST(MessagesApi, ErrorsHaveTheAnthropicShapeAndXApiKeyAuthenticates) {
  http::ServerConfig cfg;
  cfg.api_key = "sekret";
  cfg.contract_mode = "strict";
  Harness h(cfg, {}, true, kToolReply);
  auto c = h.client();
  const std::vector<std::pair<std::string, std::string>> key{{"x-api-key", "sekret"}};
  EXPECT_EQ(c.request(verb::post, "/v1/messages", "{}", {{"x-api-key", "wrong"}}).result_int(), 401);
  auto r = c.request(verb::post, "/v1/messages", R"({"max_tokens":5,"messages":[{"role":"user","content":5}]})", key);
  ASSERT_EQ(r.result_int(), 400) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("type").as_string(), "error");
  EXPECT_EQ(v.at("error").at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(v.at("error").at("param").as_string(), "messages[0].content");
  r = c.request(verb::post, "/v1/messages",
                R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})", key);
  ASSERT_EQ(r.result_int(), 400);
  EXPECT_EQ(body_json(r).at("error").at("param").as_string(), "messages[0].content[0].type");

  // A changed tool_use echo in strict mode: 422 in Anthropic's shape naming the wire message.
  r = c.request(verb::post, "/v1/messages",
                std::string(R"({"max_tokens":200,"thinking":{"type":"disabled"},"tools":)") + kAnthropicTools +
                    R"(,"messages":[{"role":"user","content":"Weather in Paris?"}]})",
                key);
  ASSERT_EQ(r.result_int(), 200) << r.body();
  std::string id(body_json(r).at("content").at(1).at("id").as_string());
  r = c.request(verb::post, "/v1/messages", json::serialize(weather_round_trip(id, "Lyon", "x")), key);
  ASSERT_EQ(r.result_int(), 422) << r.body();
  v = body_json(r);
  EXPECT_EQ(v.at("type").as_string(), "error");
  EXPECT_EQ(v.at("error").at("code").as_string(), "contract_violation");
  EXPECT_EQ(v.at("error").at("param").as_string(), "messages[1]");
}

// ---- /v1/responses --------------------------------------------------------------------------

const char* kResponsesTools =
    R"([{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string"}}}},{"type":"web_search"},{"type":"namespace","name":"mcp","tools":[]}])";

TEST(ResponsesApi, StreamFollowsTheCodexLifecycleAndTheCallRoundTripHitsTheLiveContext) {
  Harness h({}, {}, true, kToolReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/responses",
                     std::string(R"({"model":"gpt-5-codex","stream":true,"store":false,"parallel_tool_calls":true,
                         "include":["reasoning.encrypted_content"],"prompt_cache_key":"k1","reasoning":{"effort":"none"},
                         "client_metadata":{"session_id":"s"},"instructions":"You are a coding agent.","tools":)") +
                         kResponsesTools +
                         R"(,"tool_choice":"auto","input":[{"type":"message","role":"developer","content":[
                         {"type":"input_text","text":"sandbox: none"}]},{"type":"message","role":"user","content":[
                         {"type":"input_text","text":"Weather in Paris?"}]}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto events = sse_events(r.body());
  auto n = sse_names(events);
  ASSERT_GE(n.size(), 8u);
  EXPECT_EQ(n[0], "response.created");
  EXPECT_EQ(n[1], "response.in_progress");
  EXPECT_EQ(n.back(), "response.completed");
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].data.at("type").as_string(), events[i].name);
    EXPECT_EQ(events[i].data.at("sequence_number").as_int64(), static_cast<int64_t>(i));
  }
  std::string text, args;
  for (const auto& e : events) {
    if (e.name == "response.output_text.delta") text += e.data.at("delta").as_string();
    if (e.name == "response.function_call_arguments.delta") args += e.data.at("delta").as_string();
  }
  EXPECT_EQ(text, "Checking.");
  EXPECT_EQ(args, R"({"city":"Paris"})");
  auto& response = events.back().data.at("response");
  EXPECT_EQ(response.at("status").as_string(), "completed");
  auto& output = response.at("output").as_array();
  ASSERT_EQ(output.size(), 2u) << json::serialize(response);
  EXPECT_EQ(output[0].at("type").as_string(), "message");
  EXPECT_EQ(output[1].at("type").as_string(), "function_call");
  std::string call_id(output[1].at("call_id").as_string());
  EXPECT_EQ(output[1].at("arguments").as_string(), R"({"city":"Paris"})");
  EXPECT_GT(response.at("usage").at("input_tokens").as_int64(), 0);

  // Stateless continuation (store:false): the client sends the whole input back.
  json::object next = json::parse(std::string(R"({"stream":false,"reasoning":{"effort":"none"},
      "instructions":"You are a coding agent.","tools":)") +
                                  kResponsesTools + "}")
                          .as_object();
  json::array input =
      json::parse(R"([{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox: none"}]},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]}])")
          .as_array();
  for (const auto& item : output) input.push_back(item);
  input.push_back(json::object{{"type", "function_call_output"}, {"call_id", call_id}, {"output", "sunny"}});
  next["input"] = input;
  r = c.request(verb::post, "/v1/responses", json::serialize(next));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("object").as_string(), "response");
  EXPECT_EQ(v.at("ds4d").at("contract").at("replayed_blocks").as_int64(), 1) << r.body();
  EXPECT_GT(v.at("usage").at("input_tokens_details").at("cached_tokens").as_int64(), 0) << r.body();
}

TEST(ResponsesApi, EncryptedReasoningEchoesTheExactBytesStatelessly) {
  Harness h({}, {}, true, kThinkToolReply);
  auto c = h.client();
  const std::string head = std::string(R"({"store":false,"include":["reasoning.encrypted_content"],"tools":)") +
                           kResponsesTools + R"(,"reasoning":{"effort":"high","summary":"auto"},)";
  auto r = c.request(verb::post, "/v1/responses", head + R"("input":"Weather in Paris?"})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  json::array output = v.at("output").as_array();
  ASSERT_EQ(output.size(), 3u) << r.body();
  EXPECT_EQ(output[0].at("type").as_string(), "reasoning");
  EXPECT_EQ(output[0].at("summary").at(0).at("text").as_string(), "Pondering the weather.");
  EXPECT_EQ(std::string(output[0].at("encrypted_content").as_string()).rfind("ds4d.r1.", 0), 0u);
  EXPECT_EQ(output[1].at("content").at(0).at("text").as_string(), "Checking.");
  EXPECT_EQ(output[2].at("type").as_string(), "function_call");
  std::string call_id(output[2].at("call_id").as_string());

  auto echo = [&](json::object reasoning) {
    json::array input{json::object{{"role", "user"}, {"content", "Weather in Paris?"}}, reasoning, output[1], output[2],
                      json::object{{"type", "function_call_output"}, {"call_id", call_id}, {"output", "sunny"}}};
    json::object next = json::parse(head + R"("input":[]})").as_object();
    next["input"] = input;
    return body_json(c.request(verb::post, "/v1/responses", json::serialize(next)));
  };
  // The client drops the summary text but keeps encrypted_content: the reasoning is still exact.
  json::object reasoning = output[0].as_object();
  reasoning["summary"] = json::array{};
  v = echo(reasoning);
  EXPECT_TRUE(v.at("ds4d").at("contract").at("violations").as_array().empty()) << json::serialize(v);
  EXPECT_GT(v.at("usage").at("input_tokens_details").at("cached_tokens").as_int64(), 0) << json::serialize(v);
  // Without it (and without the summary) the reasoning contract is broken, and said so.
  reasoning.erase("encrypted_content");
  v = echo(reasoning);
  ASSERT_EQ(v.at("ds4d").at("contract").at("violations").as_array().size(), 1u) << json::serialize(v);
  EXPECT_EQ(v.at("ds4d").at("contract").at("violations").at(0).at("kind").as_string(), "reasoning_missing");
}

TEST(ResponsesApi, PreviousResponseIdContinuesOrAsksForTheFullInput) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/responses", R"({"input":"Say hi","reasoning":{"effort":"none"}})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  std::string id(body_json(r).at("id").as_string());
  EXPECT_EQ(id.rfind("resp_", 0), 0u);
  r = c.request(verb::post, "/v1/responses",
                R"({"previous_response_id":")" + id + R"(","input":"Again","reasoning":{"effort":"none"}})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("previous_response_id").as_string(), id);
  EXPECT_GT(v.at("usage").at("input_tokens_details").at("cached_tokens").as_int64(), 0) << r.body();

  r = c.request(verb::post, "/v1/responses", R"({"previous_response_id":"resp_gone","input":"Again"})");
  ASSERT_EQ(r.result_int(), 400) << r.body();
  v = body_json(r);
  EXPECT_EQ(v.at("error").at("param").as_string(), "previous_response_id");
  EXPECT_NE(std::string(v.at("error").at("message").as_string()).find("resend the full conversation"),
            std::string::npos);
}

}  // namespace
}  // namespace ds4::test
