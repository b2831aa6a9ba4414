// The shared submit/streaming path (gateway/http/turn_stream.hpp) under /v1/completions, which
// used to have its own copy of it: keep-alives during a long prefill, the ds4d object on the
// final streamed chunk, and raw prompts sampling with the request's temperature.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

TEST(TurnPath, StreamedCompletionSendsKeepAlivesAndCarriesTheDs4dObject) {
  serving::ServiceConfig scfg;
  scfg.prefill_chunk_tokens = 8;
  Harness h({}, scfg);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/completions",
                     R"({"prompt":"a prompt long enough for several prefill chunks","stream":true,"thinking":false,
                         "stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(r.body().rfind(": prefill\n\n", 0), 0u) << r.body().substr(0, 300);  // before any event
  auto events = HttpTestClient::sse_data(r.body());
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  const json::object* last = nullptr;
  json::value finish_chunk;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json::value v = json::parse(events[i]);
    auto& choices = v.at("choices").as_array();
    if (choices.empty()) continue;  // the usage chunk
    text += choices[0].at("text").as_string();
    if (!choices[0].at("finish_reason").is_null()) finish_chunk = v;
  }
  EXPECT_EQ(text, "Hello there");
  ASSERT_TRUE(finish_chunk.is_object());
  last = &finish_chunk.as_object();
  EXPECT_EQ(last->at("choices").at(0).at("finish_reason").as_string(), "stop");
  ASSERT_TRUE(last->contains("ds4d")) << json::serialize(*last);
  EXPECT_EQ(last->at("ds4d").at("cache").at("source").as_string(), "cold");
}

TEST(TurnPath, RawCompletionHonoursTemperatureZero) {
  Harness h;
  h.backend->flat_logits = true;  // any sampling but greedy wanders off the script
  auto c = h.client();
  for (int i = 0; i < 3; ++i) {
    auto r = c.request(verb::post, "/v1/completions",
                       R"({"prompt":"abc)" + std::to_string(i) + R"(","raw":true,"temperature":0,"max_tokens":11})");
    ASSERT_EQ(r.result_int(), 200) << r.body();
    EXPECT_EQ(json::parse(r.body()).at("choices").at(0).at("text").as_string(), "Hello there");
  }
}

}  // namespace
}  // namespace ds4::test
