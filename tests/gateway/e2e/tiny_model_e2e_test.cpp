// End to end on the real engine: the forged tiny DS4 model (or DS4D_TINY_MODEL) behind
// Ds4Backend + Service + Server, driven over loopback HTTP.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>

#include "gateway/api/api_server.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/http_test_client.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

std::string tiny_model_path() {
  if (const char* p = std::getenv("DS4D_TINY_MODEL")) return p;
  return DS4D_FORGED_TINY_MODEL;
}

class TinyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(tiny_model_path())) << tiny_model_path();
    LoadOptions load;
    load.threads = 2;
    ContextOptions ctx;
    ctx.context_length = 1024;
    backend_ = serving::Ds4Backend::load(tiny_model_path(), load, ctx);
  }
  static void TearDownTestSuite() { backend_.reset(); }

  void SetUp() override {
    service_ = std::make_unique<serving::Service>(serving::ServiceConfig{}, metrics_);
    http::ServerConfig config;
    config.port = 0;
    server_ = http::make_api_server(config, *service_, metrics_);
    server_->start();
    service_->set_backend(backend_);
  }
  void TearDown() override {
    server_->stop(std::chrono::milliseconds(0));
    service_->stop(std::chrono::milliseconds(0));
  }

  json::value post(const std::string& path, const std::string& body, unsigned expect = 200) {
    HttpTestClient c(server_->port());
    auto r = c.request(verb::post, path, body);
    EXPECT_EQ(r.result_int(), expect) << r.body();
    return r[bhttp::field::content_type] == "text/event-stream" ? json::value(r.body()) : json::parse(r.body());
  }

  static inline std::shared_ptr<serving::Ds4Backend> backend_;
  serving::Metrics metrics_;
  std::unique_ptr<serving::Service> service_;
  std::unique_ptr<http::Server> server_;
};

const char* kGreedyChat =
    R"({"model":"tiny","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":10,
        "temperature":0,"thinking":false})";

TEST_F(TinyModel, GreedyChatStreamedAndNotAgree) {
  auto whole = post("/v1/chat/completions", kGreedyChat);
  std::string body(kGreedyChat);
  body.insert(body.size() - 1, R"(,"stream":true,"stream_options":{"include_usage":true})");
  auto sse = post("/v1/chat/completions", body);
  auto events = HttpTestClient::sse_data(std::string(sse.as_string()));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text, finish;
  int64_t completion = -1;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    auto v = json::parse(events[i]);
    auto& choices = v.at("choices").as_array();
    if (choices.empty()) {
      completion = v.at("usage").at("completion_tokens").as_int64();
      continue;
    }
    if (auto* c = choices[0].at("delta").as_object().if_contains("content")) text += c->as_string();
    if (!choices[0].at("finish_reason").is_null()) finish = choices[0].at("finish_reason").as_string();
  }
  EXPECT_EQ(text, whole.at("choices").at(0).at("message").at("content").as_string());
  EXPECT_EQ(finish, whole.at("choices").at(0).at("finish_reason").as_string());
  EXPECT_EQ(completion, whole.at("usage").at("completion_tokens").as_int64());
  EXPECT_GE(completion, 1);
  EXPECT_LE(completion, 10);
}

TEST_F(TinyModel, UsageCountsPromptTokensAsTheTokenizerDoes) {
  auto v = post("/v1/completions", R"({"prompt":"Once upon a time","raw":true,"max_tokens":3,"temperature":0})");
  auto tokens = post("/tokenize", R"({"content":"Once upon a time"})");
  EXPECT_EQ(v.at("usage").at("prompt_tokens").as_int64(), static_cast<int64_t>(tokens.at("tokens").as_array().size()));
  EXPECT_EQ(v.at("usage").at("protocol_tokens").as_int64(), 0);
  // Framed: the frame's tokens are protocol tokens.
  auto framed = post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":3,"temperature":0})");
  EXPECT_GT(framed.at("usage").at("protocol_tokens").as_int64(), 0);
  EXPECT_EQ(framed.at("usage").at("prompt_tokens").as_int64() - framed.at("usage").at("protocol_tokens").as_int64(),
            static_cast<int64_t>(tokens.at("tokens").as_array().size()));
}

TEST_F(TinyModel, SpecialStringsTokenizeToControlTokensAndRoundTrip) {
  auto t = post("/tokenize", R"({"content":"<｜User｜>hi<｜Assistant｜>"})");
  auto& ids = t.at("tokens").as_array();
  ASSERT_GE(ids.size(), 3u);
  auto plain = post("/tokenize", R"({"content":"<｜User｜>hi<｜Assistant｜>","parse_special":false})");
  EXPECT_GT(plain.at("tokens").as_array().size(), ids.size());
  auto back = post("/detokenize", json::serialize(json::object{{"tokens", ids}}));
  EXPECT_EQ(back.at("content").as_string(), "<｜User｜>hi<｜Assistant｜>");
}

TEST_F(TinyModel, EchoedTurnReusesTheLiveContext) {
  auto first = post("/v1/chat/completions", kGreedyChat);
  std::string answer(first.at("choices").at(0).at("message").at("content").as_string());
  int64_t first_prompt = first.at("usage").at("prompt_tokens").as_int64();
  json::object follow = {{"model", "tiny"},
                         {"max_tokens", 4},
                         {"temperature", 0},
                         {"thinking", false},
                         {"messages", json::array{json::object{{"role", "user"}, {"content", "Tell me a story."}},
                                                  json::object{{"role", "assistant"}, {"content", answer}},
                                                  json::object{{"role", "user"}, {"content", "And then?"}}}}};
  auto second = post("/v1/chat/completions", json::serialize(follow));
  int64_t cached = second.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64();
  EXPECT_GE(cached, first_prompt) << "answer: " << answer;
  EXPECT_EQ(second.at("ds4d").at("cache").at("source").as_string(), "live");
  EXPECT_TRUE(second.at("ds4d").at("contract").at("violations").as_array().empty());
}

TEST_F(TinyModel, PromptLongerThanTheContextIs400) {
  std::string big;
  for (int i = 0; i < 1500; ++i) big += "item " + std::to_string(i) + ", ";
  auto v = post("/v1/chat/completions", R"({"messages":[{"role":"user","content":")" + big + R"("}]})", 400);
  EXPECT_EQ(v.at("error").at("code").as_string(), "context_length_exceeded");
}

}  // namespace
}  // namespace ds4::test
