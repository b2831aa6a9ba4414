// OpenAI response shapes: exact JSON of each builder.
#include "gateway/protocol/openai_shapes.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace ds4::protocol::openai {
namespace {

const ResponseMeta kMeta{"chatcmpl-7", 1767225600, "deepseek-v4-flash"};

std::string s(const boost::json::object& o) { return boost::json::serialize(o); }

TEST(OpenAiShapes, ChatCompletionWithReasoningAndToolCalls) {
  AssistantOutput out{"", "thought", {{"call_1", "f", "{\"a\":1}"}}};
  Usage u{100, 20, 64, 12};
  auto o = chat_completion(kMeta, out, "tool_calls", u);
  EXPECT_EQ(s(o),
            R"({"id":"chatcmpl-7","object":"chat.completion","created":1767225600,"model":"deepseek-v4-flash",)"
            R"("choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":"thought",)"
            R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},)"
            R"("logprobs":null,"finish_reason":"tool_calls"}],)"
            R"("usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,)"
            R"("prompt_tokens_details":{"cached_tokens":64},"protocol_tokens":12}})");
}

TEST(OpenAiShapes, StreamChunks) {
  EXPECT_EQ(
      s(chat_chunk_role(kMeta))
              .find(
                  R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}])") !=
          std::string::npos,
      true);
  EXPECT_NE(s(chat_chunk_reasoning(kMeta, "r")).find(R"("delta":{"reasoning_content":"r"})"), std::string::npos);
  EXPECT_NE(s(chat_chunk_content(kMeta, "c")).find(R"("object":"chat.completion.chunk")"), std::string::npos);
  EXPECT_NE(
      s(chat_chunk_tool_call_begin(kMeta, 1, "call_9", "f"))
          .find(
              R"("delta":{"tool_calls":[{"index":1,"id":"call_9","type":"function","function":{"name":"f","arguments":""}}]})"),
      std::string::npos);
  EXPECT_NE(s(chat_chunk_tool_call_arguments(kMeta, 1, "{\"a"))
                .find(R"("delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a"}}]})"),
            std::string::npos);
  EXPECT_NE(s(chat_chunk_finish(kMeta, "length")).find(R"("delta":{},"logprobs":null,"finish_reason":"length")"),
            std::string::npos);
  auto usage = chat_chunk_usage(kMeta, Usage{1, 2, 0, 1});
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("total_tokens").as_uint64(), 3u);
  EXPECT_EQ(sse_data(boost::json::object{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(OpenAiShapes, TextCompletion) {
  auto o = text_completion(ResponseMeta{"cmpl-1", 5, "m"}, "out", "stop", Usage{3, 1, 0, 0});
  EXPECT_EQ(o.at("object").as_string(), "text_completion");
  EXPECT_EQ(s(o.at("choices").as_array()[0].as_object()),
            R"({"text":"out","index":0,"logprobs":null,"finish_reason":"stop"})");
  auto c = text_completion_chunk(ResponseMeta{"cmpl-1", 5, "m"}, "o");
  EXPECT_TRUE(c.at("choices").as_array()[0].at("finish_reason").is_null());
}

TEST(OpenAiShapes, Errors) {
  EXPECT_EQ(s(error_body("bad", "invalid_request_error")),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}})");
  EXPECT_EQ(
      s(request_error_body(RequestError("messages[3].content", "wrong"))),
      R"({"error":{"message":"wrong","type":"invalid_request_error","param":"messages[3].content","code":null}})");
  auto ctx = context_length_body(40000, 32768, "messages");
  EXPECT_EQ(ctx.at("error").at("code").as_string(), "context_length_exceeded");
  EXPECT_EQ(ctx.at("error").at("n_ctx").as_uint64(), 32768u);

  std::vector<ContractViolation> v = {
      {4, ViolationKind::ReasoningMissing, "no reasoning", "send reasoning_content back"}};
  auto body = contract_violation_body(v);
  const auto& err = body.at("error").as_object();
  EXPECT_EQ(err.at("code").as_string(), "contract_violation");
  EXPECT_EQ(err.at("param").as_string(), "messages[4]");
  std::string message(err.at("message").as_string());
  EXPECT_NE(message.find("messages[4]: reasoning_missing"), std::string::npos);
  EXPECT_NE(message.find("send reasoning_content back"), std::string::npos);
  EXPECT_EQ(err.at("violations").as_array().size(), 1u);
}

TEST(OpenAiShapes, Ds4dExtension) {
  Ds4dExtension ext;
  ext.contract = ContractReport{ContractMode::Strict, {}, 2, 1, 0};
  ext.cache = CacheReport{"live", 512, 600};
  auto o = ds4d_json(ext);
  EXPECT_EQ(s(o), R"({"contract":{"mode":"strict","ok":true,"violations":[],"replayed_blocks":2,"canonical_blocks":1,)"
                  R"("repaired_reasoning":0},"cache":{"source":"live","cached_tokens":512,"prompt_tokens":600}})");
  auto done = chat_chunk_finish(kMeta, "stop", &ext);
  EXPECT_TRUE(done.contains("ds4d"));
}

}  // namespace
}  // namespace ds4::protocol::openai
