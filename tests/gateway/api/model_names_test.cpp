// Model names and aliases over HTTP (gateway/api/model_names.hpp): the served name, the backend's
// id and server.model_aliases (exact or '*'-prefix) are accepted as the request's model in chat,
// completions, Anthropic Messages and Responses, and echoed; another name is 404 model_not_found
// in each API's error shape; /v1/models lists the served name and the exact aliases. The default
// ("*") keeps accepting any name, which clients rely on.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

http::ServerConfig aliased() {
  http::ServerConfig cfg;
  cfg.model_name = "deepseek-v4-flash";
  cfg.model_aliases = {"deepseek-chat", "claude-*"};
  return cfg;
}

std::string model_field(const std::string& model) { return model.empty() ? "" : R"("model":")" + model + R"(",)"; }
std::string chat(const std::string& model) {
  return "{" + model_field(model) + R"("thinking":false,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
}
std::string messages(const std::string& model) {
  return "{" + model_field(model) +
         R"("thinking":{"type":"disabled"},"max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
}
std::string responses(const std::string& model) {
  return "{" + model_field(model) + R"("reasoning":{"effort":"none"},"max_output_tokens":4,"input":"hi"})";
}
std::string completion(const std::string& model) {
  return "{" + model_field(model) + R"("prompt":"hi","max_tokens":4})";
}

TEST(ModelNames, AliasesAreAcceptedAndEchoedInEveryApi) {
  Harness h(aliased());
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", chat("deepseek-chat"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("model").as_string(), "deepseek-chat");
  r = c.request(verb::post, "/v1/messages", messages("claude-sonnet-4-5-20250929"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("model").as_string(), "claude-sonnet-4-5-20250929");
  r = c.request(verb::post, "/v1/responses", responses("deepseek-v4-flash"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("model").as_string(), "deepseek-v4-flash");
  r = c.request(verb::post, "/v1/completions", completion("scripted"));  // the backend's own id
  ASSERT_EQ(r.result_int(), 200) << r.body();
  r = c.request(verb::post, "/v1/chat/completions", chat(""));  // no model: the served one
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("model").as_string(), "deepseek-v4-flash");

  r = c.request(verb::get, "/v1/models");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  std::vector<std::string> ids;
  const auto models = body_json(r);
  for (const auto& m : models.at("data").as_array()) ids.emplace_back(m.at("id").as_string());
  EXPECT_EQ(ids, (std::vector<std::string>{"deepseek-v4-flash", "deepseek-chat"}));
}

TEST(ModelNames, UnknownNamesAre404InEachApisShape) {
  Harness h(aliased());
  auto c = h.client();
  for (const auto& [path, body] :
       std::vector<std::pair<std::string, std::string>>{{"/v1/chat/completions", chat("gpt-4o")},
                                                        {"/v1/completions", completion("deepseek-chat-v2")},
                                                        {"/v1/responses", responses("gpt-5-codex")}}) {
    auto r = c.request(verb::post, path, body);
    ASSERT_EQ(r.result_int(), 404) << path << " " << r.body();
    auto err = body_json(r).at("error");
    EXPECT_EQ(err.at("code").as_string(), "model_not_found") << path;
    EXPECT_EQ(err.at("param").as_string(), "model") << path;
    std::string message(err.at("message").as_string());
    EXPECT_NE(message.find("'deepseek-v4-flash'"), std::string::npos) << message;
    EXPECT_NE(message.find("server.model_aliases"), std::string::npos) << message;
  }
  auto r = c.request(verb::post, "/v1/messages", messages("claud-typo"));
  ASSERT_EQ(r.result_int(), 404) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("type").as_string(), "error");
  EXPECT_EQ(v.at("error").at("type").as_string(), "not_found_error");
  EXPECT_NE(std::string(v.at("error").at("message").as_string()).find("claud-typo"), std::string::npos);
  EXPECT_EQ(h.backend->appended_tokens.load(), 0);  // nothing reached the engine
}

TEST(ModelNames, TheDefaultAcceptsAnyNameAsClientsSendThem) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/messages", messages("claude-haiku-4-5"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(body_json(r).at("model").as_string(), "claude-haiku-4-5");
  r = c.request(verb::post, "/v1/responses", responses("gpt-5-codex"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  r = c.request(verb::get, "/v1/models");
  ASSERT_EQ(body_json(r).at("data").as_array().size(), 1u) << r.body();  // "*" is not a name
}

}  // namespace
}  // namespace ds4::test
