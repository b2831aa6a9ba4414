// The output parameters over HTTP on the scripted engine (docs/api-parameters.md §output):
// logprobs / top_logprobs (chat, completions, Responses), logit_bias, response_format and
// Responses text.format by constrained decoding, and a 400 naming every parameter that is not
// implemented (best_of, suffix, logprobs on a stream) or malformed (chat tool parameters).
// Before these were implemented, each of these requests was answered 200 as if the parameter
// had not been sent.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

json::value post(Harness& h, const std::string& target, const std::string& body, unsigned* status = nullptr) {
  auto c = h.client();
  auto r = c.request(verb::post, target, body);
  if (status) *status = r.result_int();
  return body_json(r);
}

const std::string kChat = R"("model":"m","thinking":{"type":"disabled"},"temperature":0,)"
                          R"("messages":[{"role":"user","content":"hi"}])";

TEST(OutputParams, ChatLogprobsListEveryTokenWithItsAlternatives) {
  Harness h;
  unsigned status = 0;
  json::value r =
      post(h, "/v1/chat/completions", "{" + kChat + R"(,"max_tokens":3,"logprobs":true,"top_logprobs":2})", &status);
  ASSERT_EQ(status, 200u) << json::serialize(r);
  const json::value& lp = r.at("choices").at(0).at("logprobs");
  ASSERT_TRUE(lp.is_object()) << json::serialize(r);
  const json::array& content = lp.at("content").as_array();
  ASSERT_EQ(content.size(), 3u);
  const char* expected[] = {"H", "e", "l"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(content[i].at("token").as_string(), expected[i]);
    EXPECT_NEAR(content[i].at("logprob").to_number<double>(), 0.0, 1e-6);  // the scripted token: logit 50 vs 0
    EXPECT_EQ(content[i].at("bytes").as_array().size(), 1u);
    const json::array& top = content[i].at("top_logprobs").as_array();
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].at("token").as_string(), expected[i]);
    EXPECT_LT(top[1].at("logprob").to_number<double>(), -40.0);
  }
}

TEST(OutputParams, CompletionLogprobsHaveTheLegacyShape) {
  Harness h;
  unsigned status = 0;
  json::value r = post(h, "/v1/completions",
                       R"({"model":"m","prompt":"x","raw":true,"temperature":0,"max_tokens":2,"logprobs":1})", &status);
  ASSERT_EQ(status, 200u) << json::serialize(r);
  const json::value& lp = r.at("choices").at(0).at("logprobs");
  ASSERT_TRUE(lp.is_object()) << json::serialize(r);
  EXPECT_EQ(lp.at("tokens"), (json::array{"H", "e"}));
  EXPECT_EQ(lp.at("token_logprobs").as_array().size(), 2u);
  EXPECT_EQ(lp.at("text_offset"), (json::array{0, 1}));
  EXPECT_TRUE(lp.at("top_logprobs").at(1).as_object().contains("e"));
}

TEST(OutputParams, ResponsesTopLogprobsGoOnTheOutputText) {
  Harness h;
  unsigned status = 0;
  json::value r = post(h, "/v1/responses",
                       R"({"model":"m","input":"hi","reasoning":{"effort":"none"},"temperature":0,)"
                       R"("max_output_tokens":2,"top_logprobs":1})",
                       &status);
  ASSERT_EQ(status, 200u) << json::serialize(r);
  const json::value* text = nullptr;
  for (const json::value& item : r.at("output").as_array())
    if (item.at("type") == "message") text = &item.at("content").at(0);
  ASSERT_NE(text, nullptr) << json::serialize(r);
  ASSERT_TRUE(text->as_object().contains("logprobs")) << json::serialize(*text);
  EXPECT_EQ(text->at("logprobs").as_array().size(), 2u);
  EXPECT_EQ(text->at("logprobs").at(0).at("top_logprobs").as_array().size(), 1u);
}

TEST(OutputParams, LogitBiasIsAddedBeforeSampling) {
  Harness h;
  // 'Z' (90) +100 outweighs the scripted 'H' (logit 50); 'H' (72) -100 is never taken.
  json::value r = post(h, "/v1/chat/completions", "{" + kChat + R"(,"max_tokens":1,"logit_bias":{"90":100}})");
  EXPECT_EQ(r.at("choices").at(0).at("message").at("content"), "Z") << json::serialize(r);
  json::value c =
      post(h, "/v1/completions",
           R"({"model":"m","prompt":"x","raw":true,"temperature":0,"max_tokens":1,"logit_bias":{"72":-100}})");
  EXPECT_NE(c.at("choices").at(0).at("text"), "H") << json::serialize(c);
}

TEST(OutputParams, ResponseFormatJsonSchemaConstrainsTheAnswer) {
  Harness h({}, {}, true, R"({"city": "Paris", "extra": true})");
  h.backend->keep_position = true;  // a refused byte does not start the script over
  const std::string format =
      R"({"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":)"
      R"({"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}})";
  json::value r =
      post(h, "/v1/chat/completions", "{" + kChat + R"(,"max_tokens":200,"response_format":)" + format + "}");
  const std::string content(r.at("choices").at(0).at("message").at("content").as_string());
  boost::system::error_code ec;
  json::value parsed = json::parse(content, ec);
  ASSERT_FALSE(ec) << content;
  EXPECT_EQ(parsed, (json::object{{"city", "Paris"}})) << content;
  EXPECT_EQ(r.at("choices").at(0).at("finish_reason"), "stop");
}

TEST(OutputParams, JsonObjectFormatOnChatAndResponses) {
  Harness h({}, {}, true, R"(Sure: {"a": [1, 2]})");
  h.backend->keep_position = true;
  json::value r =
      post(h, "/v1/chat/completions", "{" + kChat + R"(,"max_tokens":200,"response_format":{"type":"json_object"}})");
  const std::string content(r.at("choices").at(0).at("message").at("content").as_string());
  boost::system::error_code ec;
  json::value parsed = json::parse(content, ec);
  ASSERT_FALSE(ec) << content;
  EXPECT_EQ(parsed, json::parse(R"({"a":[1,2]})")) << content;

  json::value rr = post(h, "/v1/responses",
                        R"({"model":"m","input":"hi","reasoning":{"effort":"none"},"temperature":0,)"
                        R"("max_output_tokens":200,"text":{"format":{"type":"json_object"}}})");
  std::string text;
  for (const json::value& item : rr.at("output").as_array())
    if (item.at("type") == "message") text = item.at("content").at(0).at("text").as_string();
  EXPECT_EQ(json::parse(text, ec), json::parse(R"({"a":[1,2]})")) << json::serialize(rr);
}

// A 400 in the OpenAI error shape naming `param`.
void expect_rejected(Harness& h, const std::string& target, const std::string& body, const std::string& param) {
  unsigned status = 0;
  json::value r = post(h, target, body, &status);
  EXPECT_EQ(status, 400u) << body << " -> " << json::serialize(r);
  ASSERT_TRUE(r.is_object() && r.as_object().contains("error")) << json::serialize(r);
  EXPECT_EQ(r.at("error").at("param"), json::value(param)) << json::serialize(r);
}

TEST(OutputParams, UnimplementedOrMalformedParametersAre400sNamingThem) {
  Harness h;
  const std::string completion = R"({"model":"m","prompt":"x","max_tokens":2,)";
  expect_rejected(h, "/v1/completions", completion + R"("best_of":2})", "best_of");
  expect_rejected(h, "/v1/completions", completion + R"("suffix":"end"})", "suffix");
  expect_rejected(h, "/v1/completions", completion + R"("logprobs":9})", "logprobs");
  expect_rejected(h, "/v1/completions", completion + R"("logprobs":1,"stream":true})", "logprobs");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"logprobs":true,"stream":true})", "logprobs");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"top_logprobs":2})", "top_logprobs");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"logit_bias":{"99999":1}})", "logit_bias.99999");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"logit_bias":{"7":101}})", "logit_bias.7");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"logit_bias":{"x":1}})", "logit_bias.x");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"response_format":{"type":"yaml"}})",
                  "response_format.type");
  expect_rejected(h, "/v1/chat/completions", "{" + kChat + R"(,"response_format":{"type":"json_schema"}})",
                  "response_format.json_schema");
  expect_rejected(
      h, "/v1/chat/completions",
      "{" + kChat +
          R"(,"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f"}}]})",
      "response_format");
  expect_rejected(h, "/v1/chat/completions",
                  "{" + kChat + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":5}}]})",
                  "tools[0].function.parameters");
  expect_rejected(h, "/v1/responses",
                  R"({"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":5}}})",
                  "text.format.schema");
  expect_rejected(h, "/v1/responses", R"({"model":"m","input":"hi","stream":true,"top_logprobs":2})", "top_logprobs");
}

}  // namespace
}  // namespace ds4::test
