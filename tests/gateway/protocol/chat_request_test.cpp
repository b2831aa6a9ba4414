// Request parsing: accepted OpenAI shapes, the thinking mapping, and errors naming JSON paths.
#include "gateway/protocol/chat_request.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace ds4::protocol {
namespace {

ChatRequest chat(std::string_view body) { return parse_chat_request(boost::json::parse(body)); }

// The RequestError param for `body`, or "<accepted>".
std::string error_param(std::string_view body) {
  try {
    chat(body);
  } catch (const RequestError& e) {
    EXPECT_FALSE(e.message.empty());
    return e.param;
  }
  return "<accepted>";
}

TEST(ChatRequest, ParsesAFullRequest) {
  auto r = chat(R"({
      "model": "deepseek-v4-flash",
      "messages": [
        {"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, "b", {"type": "text", "text": "c"}]},
        {"role": "assistant", "content": null, "reasoning": "r",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                        {"id": "call_2", "function": {"name": "g", "arguments": {"y": [1, 2]}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "out"},
        {"role": "function", "content": "legacy"}
      ],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}, {"name": "g"}],
      "tool_choice": "auto",
      "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1, "seed": 7,
      "max_tokens": 10, "max_completion_tokens": 20,
      "stop": ["END", ""],
      "stream": true, "stream_options": {"include_usage": true},
      "unknown_extension": {"ignored": true}
    })");
  EXPECT_EQ(r.model, "deepseek-v4-flash");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[1].content, "abc");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(*r.messages[2].reasoning, "r");
  ASSERT_EQ(r.messages[2].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments, "{\"x\": 1}");  // verbatim
  EXPECT_EQ(r.messages[2].tool_calls[1].arguments, "{\"y\":[1,2]}");
  EXPECT_EQ(r.messages[3].role, Role::Tool);
  EXPECT_EQ(r.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[4].role, Role::Tool);
  ASSERT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(r.tools[0].at("name").as_string(), "f");
  EXPECT_FALSE(r.tools[0].contains("type"));  // unwrapped
  EXPECT_TRUE(r.tools_active());
  EXPECT_EQ(*r.sampling.temperature, 0.5);
  EXPECT_EQ(*r.sampling.top_k, 40u);
  EXPECT_EQ(*r.sampling.seed, 7u);
  EXPECT_EQ(*r.max_tokens, 20u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.thinking, Thinking::High);
}

TEST(ChatRequest, ReasoningContentWinsOverReasoning) {
  auto r = chat(R"({"messages":[{"role":"assistant","content":"a","reasoning_content":"rc","reasoning":"r"}]})");
  EXPECT_EQ(*r.messages[0].reasoning, "rc");
  r = chat(R"({"messages":[{"role":"assistant","content":"a"}]})");
  EXPECT_FALSE(r.messages[0].reasoning);
}

TEST(ChatRequest, ThinkingMapping) {
  auto mode = [](std::string_view extra) {
    std::string body = R"({"messages":[{"role":"user","content":"q"}])" + std::string(extra) + "}";
    return chat(body).thinking;
  };
  EXPECT_EQ(mode(""), Thinking::High);
  EXPECT_EQ(mode(R"(,"reasoning_effort":"none")"), Thinking::Off);
  for (auto e : {"minimal", "low", "medium", "high", "xhigh"})
    EXPECT_EQ(mode(std::string(R"(,"reasoning_effort":")") + e + "\""), Thinking::High) << e;
  EXPECT_EQ(mode(R"(,"reasoning_effort":"max")"), Thinking::Max);
  EXPECT_EQ(mode(R"(,"reasoning_effort":null)"), Thinking::High);
  EXPECT_EQ(mode(R"(,"thinking":{"type":"disabled"})"), Thinking::Off);
  EXPECT_EQ(mode(R"(,"thinking":{"type":"disabled"},"reasoning_effort":"max")"), Thinking::Off);
  EXPECT_EQ(mode(R"(,"thinking":{"type":"enabled"},"reasoning_effort":"max")"), Thinking::Max);
  EXPECT_EQ(mode(R"(,"thinking":false)"), Thinking::Off);
  EXPECT_EQ(mode(R"(,"think":false)"), Thinking::Off);
  EXPECT_EQ(mode(R"(,"model":"deepseek-chat")"), Thinking::Off);
  EXPECT_EQ(mode(R"(,"model":"deepseek-chat","thinking":true)"), Thinking::High);
  EXPECT_EQ(mode(R"(,"model":"deepseek-reasoner")"), Thinking::High);
}

TEST(ChatRequest, ErrorsNameTheJsonPath) {
  EXPECT_EQ(error_param(R"([1])"), "");
  EXPECT_EQ(error_param(R"({})"), "messages");
  EXPECT_EQ(error_param(R"({"messages":[]})"), "messages");
  EXPECT_EQ(error_param(R"({"messages":{}})"), "messages");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":"a"},{"content":"b"}]})"), "messages[1].role");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"wizard","content":"b"}]})"), "messages[0].role");
  EXPECT_EQ(
      error_param(
          R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"},{"role":"user","content":5}]})"),
      "messages[3].content");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":["a",{"type":"image_url","image_url":{}}]}]})"),
            "messages[0].content[1].type");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})"),
            "messages[0].content[0].text");
  EXPECT_EQ(
      error_param(R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}]})"),
      "messages[0].tool_calls[0].function.name");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}]})"),
            "messages[0].tool_calls[0].id");
  EXPECT_EQ(
      error_param(R"({"messages":[{"role":"user","content":"q","tool_calls":[{"id":"c","function":{"name":"f"}}]}]})"),
      "messages[0].tool_calls");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"assistant","reasoning_content":3}]})"),
            "messages[0].reasoning_content");
  const std::string ok = R"({"messages":[{"role":"user","content":"q"}],)";
  EXPECT_EQ(error_param(ok + R"("tools":[{"type":"function","function":{}}]})"), "tools[0].function.name");
  EXPECT_EQ(error_param(ok + R"("tools":[{"name":"a"},{"type":"retrieval","function":{"name":"x"}}]})"),
            "tools[1].type");
  EXPECT_EQ(error_param(ok + R"("tool_choice":"sometimes"})"), "tool_choice");
  EXPECT_EQ(error_param(ok + R"("temperature":"hot"})"), "temperature");
  EXPECT_EQ(error_param(ok + R"("temperature":3})"), "temperature");
  EXPECT_EQ(error_param(ok + R"("top_p":-0.1})"), "top_p");
  EXPECT_EQ(error_param(ok + R"("top_k":1.5})"), "top_k");
  EXPECT_EQ(error_param(ok + R"("max_tokens":-1})"), "max_tokens");
  EXPECT_EQ(error_param(ok + R"("max_completion_tokens":"many"})"), "max_completion_tokens");
  EXPECT_EQ(error_param(ok + R"("stop":[1]})"), "stop[0]");
  EXPECT_EQ(error_param(ok + R"("stream":"yes"})"), "stream");
  EXPECT_EQ(error_param(ok + R"("stream_options":{"include_usage":1}})"), "stream_options.include_usage");
  EXPECT_EQ(error_param(ok + R"("reasoning_effort":"extreme"})"), "reasoning_effort");
  EXPECT_EQ(error_param(ok + R"("thinking":{"type":"sometimes"}})"), "thinking.type");
  EXPECT_EQ(error_param(ok + R"("n":2})"), "n");
  EXPECT_EQ(error_param(ok + R"("model":"m","tool_choice":{"type":"function","function":{"name":"f"}}})"),
            "<accepted>");
}

// 2^64-1 is the largest seed; 2^64 (which JSON parsers read as a double equal to (double)UINT64_MAX)
// used to be converted with an overflow and accepted.
TEST(ChatRequest, SeedRangeIsCheckedUpTo2To64) {
  auto r = chat(R"({"messages":[{"role":"user","content":"x"}],"seed":18446744073709551615})");
  EXPECT_EQ(*r.sampling.seed, 18446744073709551615u);
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":"x"}],"seed":18446744073709551616})"), "seed");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":"x"}],"seed":1e30})"), "seed");
  EXPECT_EQ(error_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1e19})"), "max_tokens");
}

TEST(ChatRequest, ForcedToolChoiceAndNone) {
  auto r = chat(R"({"messages":[{"role":"user","content":"q"}],"tools":[{"name":"f"}],
                      "tool_choice":{"type":"function","function":{"name":"f"}}})");
  EXPECT_EQ(r.tool_choice, "function:f");
  EXPECT_TRUE(r.tools_active());
  r = chat(R"({"messages":[{"role":"user","content":"q"}],"tools":[{"name":"f"}],"tool_choice":"none"})");
  EXPECT_FALSE(r.tools_active());
}

TEST(CompletionRequest, PromptForms) {
  auto c = parse_completion_request(boost::json::parse(R"({"prompt":"hi","raw":true,"max_tokens":5})"));
  EXPECT_EQ(std::get<std::string>(c.prompt), "hi");
  EXPECT_TRUE(c.raw);
  EXPECT_EQ(*c.max_tokens, 5u);
  c = parse_completion_request(boost::json::parse(R"({"prompt":["hi"]})"));
  EXPECT_EQ(std::get<std::string>(c.prompt), "hi");
  c = parse_completion_request(boost::json::parse(R"({"prompt":[1,2,3]})"));
  EXPECT_EQ(std::get<std::vector<int32_t>>(c.prompt), (std::vector<int32_t>{1, 2, 3}));
  c = parse_completion_request(boost::json::parse(R"({"prompt":[[4,5]],"reasoning_effort":"none"})"));
  EXPECT_EQ(std::get<std::vector<int32_t>>(c.prompt), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(c.thinking, Thinking::Off);

  auto param = [](std::string_view body) {
    try {
      parse_completion_request(boost::json::parse(body));
    } catch (const RequestError& e) {
      return e.param;
    }
    return std::string("<accepted>");
  };
  EXPECT_EQ(param(R"({})"), "prompt");
  EXPECT_EQ(param(R"({"prompt":["a","b"]})"), "prompt");
  EXPECT_EQ(param(R"({"prompt":[1,-2]})"), "prompt[1]");
  EXPECT_EQ(param(R"({"prompt":[[1,"x"]]})"), "prompt[0][1]");
  EXPECT_EQ(param(R"({"prompt":"a","raw":"yes"})"), "raw");
  EXPECT_EQ(param(R"({"prompt":"a","echo":true})"), "echo");
}

}  // namespace
}  // namespace ds4::protocol
