// The shared submit/streaming path (gateway/api/turn_stream.hpp) under /v1/completions, which
// used to have its own copy of it: keep-alives during a long prefill, the ds4d object on the
// final streamed chunk, and raw prompts sampling with the request's temperature.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "gateway/api/turn_submit.hpp"
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
  EXPECT_EQ(last->at("ds4d").at("cache").at("source").as_string(), "none");
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

// Requests waiting in the queue keep their connection busy on every endpoint: streams open at
// once with `: queued, position N` comments; non-streamed requests that wait past the first
// queue tick get their 200 head and a newline per tick, then the JSON document (leading
// whitespace is valid JSON). Before, only chat and completions streams heard anything, and a
// non-streamed request sat silent however long it waited.
TEST(TurnPath, QueuedRequestsOfEveryEndpointKeepTheirConnectionBusy) {
  serving::ServiceConfig scfg;
  scfg.queue_keepalive = std::chrono::milliseconds(20);
  scfg.max_queued_jobs = 8;
  Harness h({}, scfg);
  h.backend->close_gate();  // the first job holds the worker inside append()
  auto first = h.client();
  first.send(verb::post, "/v1/completions", R"({"prompt":"x","thinking":false})");
  ASSERT_TRUE(h.backend->wait_until_blocked(std::chrono::seconds(10)));

  struct Case {
    const char* path;
    std::string body;
    bool stream;
  };
  const std::string user = R"([{"role":"user","content":"hi"}])";
  std::vector<Case> cases = {
      {"/v1/chat/completions", R"({"thinking":false,"messages":)" + user + "}", false},
      {"/v1/completions", R"({"prompt":"abc","thinking":false})", false},
      {"/v1/messages", R"({"max_tokens":64,"thinking":{"type":"disabled"},"messages":)" + user + "}", false},
      {"/v1/responses", R"({"reasoning":{"effort":"none"},"input":"hi"})", false},
      {"/v1/messages", R"({"max_tokens":64,"stream":true,"thinking":{"type":"disabled"},"messages":)" + user + "}",
       true},
      {"/v1/responses", R"({"stream":true,"reasoning":{"effort":"none"},"input":"hi"})", true},
  };
  std::vector<std::unique_ptr<HttpTestClient>> clients;
  for (const auto& k : cases) {
    clients.push_back(std::make_unique<HttpTestClient>(h.server->port()));
    clients.back()->send(verb::post, k.path, k.body);
  }
  ASSERT_TRUE(eventually([&] { return h.service.queued() == cases.size(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // several queue ticks
  h.backend->open_gate();
  ASSERT_EQ(first.read().result_int(), 200);
  for (size_t i = 0; i < cases.size(); ++i) {
    auto r = clients[i]->read();
    SCOPED_TRACE(std::string(cases[i].path) + (cases[i].stream ? " streamed" : ""));
    ASSERT_EQ(r.result_int(), 200) << r.body();
    if (cases[i].stream) {
      EXPECT_EQ(r.body().rfind(": queued, position ", 0), 0u) << r.body().substr(0, 200);
      EXPECT_FALSE(HttpTestClient::sse_data(r.body()).empty());
      continue;
    }
    EXPECT_EQ(r[bhttp::field::content_type], "application/json");
    EXPECT_TRUE(r.body().starts_with("\n")) << r.body().substr(0, 200);
    json::value v = json::parse(r.body());  // leading whitespace and all
    EXPECT_TRUE(v.is_object());
    const auto* error = v.as_object().if_contains("error");
    EXPECT_TRUE(!error || error->is_null()) << r.body();
  }
}

// Session hints reach the serving layer (and its request log line) as sent when they are short
// printable ASCII; anything else only as a hash, so a client cannot write into the log.
TEST(TurnPath, SessionHintsAreKeptAsSentOrHashed) {
  EXPECT_EQ(http::session_key(""), "");
  EXPECT_EQ(http::session_key("019a8d0c-1111-7222-8333-944455556666"), "019a8d0c-1111-7222-8333-944455556666");
  const std::string odd = http::session_key("two words\nand a newline");
  EXPECT_EQ(odd.size(), 17u);
  EXPECT_EQ(odd[0], 'h');
  EXPECT_EQ(odd, http::session_key("two words\nand a newline"));  // stable: the same session
  EXPECT_NE(odd, http::session_key("two words\nand another"));
  EXPECT_EQ(http::session_key(std::string(129, 'a')).size(), 17u);
}

}  // namespace
}  // namespace ds4::test
