// The HTTP server over a loopback socket: health while loading, routing errors, limits, auth,
// CORS, keep-alive, queue full, disconnect cancellation and graceful drain. The engine is the
// scripted backend, so every expectation is exact.
#include "gateway/api/api_server.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/http_test_client.hpp"
#include "tests/gateway/scripted_backend.hpp"
#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

const std::string kChatBody =
    R"({"model":"m","messages":[{"role":"user","content":"Say hi"}],"thinking":false,"max_tokens":64})";

TEST(GatewayServer, HealthReportsLoadingProgressThenReady) {
  Harness h({}, {}, /*load=*/false);
  h.service.set_load_progress(0.25);
  auto c = h.client();
  auto r = c.request(verb::get, "/health");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(body_json(r).at("status").as_string(), "loading");
  EXPECT_DOUBLE_EQ(body_json(r).at("progress").as_double(), 0.25);
  // Liveness is fine while loading; model endpoints say 503.
  EXPECT_EQ(c.request(verb::get, "/health/live").result_int(), 200);
  auto chat = c.request(verb::post, "/v1/chat/completions", kChatBody);
  EXPECT_EQ(chat.result_int(), 503);
  EXPECT_EQ(body_json(chat).at("error").at("code").as_string(), "loading");
  h.service.set_backend(h.backend);
  r = c.request(verb::get, "/health");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"status":"ok","sessions":{"active":0,"max":1,"queued":0}})");
}

TEST(GatewayServer, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::get, "/nope");
  EXPECT_EQ(r.result_int(), 404);
  EXPECT_TRUE(body_json(r).at("error").at("message").is_string());
  // A path that is not UTF-8 is quoted in the message as valid UTF-8 (found by the fuzzer).
  r = c.request(verb::get, "/x\x88\x88");
  EXPECT_EQ(r.result_int(), 404);
  EXPECT_EQ(body_json(r).at("error").at("message").as_string(), "unknown endpoint /x\xEF\xBF\xBD\xEF\xBF\xBD");
  r = c.request(verb::get, "/v1/chat/completions");
  EXPECT_EQ(r.result_int(), 405);
  EXPECT_EQ(r[bhttp::field::allow], "POST");
  EXPECT_EQ(body_json(r).at("error").at("type").as_string(), "invalid_request_error");
}

TEST(GatewayServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  Harness h;
  auto c = h.client();
  for (int i = 0; i < 3; ++i) {
    auto r = c.request(verb::get, "/health/live");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_TRUE(r.keep_alive());
  }
  auto r = c.request(verb::get, "/health/live", {}, {}, /*keep_alive=*/false);
  EXPECT_FALSE(r.keep_alive());
  EXPECT_TRUE(c.closed_by_server());
}

TEST(GatewayServer, OversizedBodyIs413AndConnectionCloses) {
  http::ServerConfig cfg;
  cfg.max_body_bytes = 1024;
  Harness h(cfg);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", std::string(4096, ' '));
  EXPECT_EQ(r.result_int(), 413);
  EXPECT_EQ(body_json(r).at("error").at("type").as_string(), "invalid_request_error");
  EXPECT_FALSE(r.keep_alive());
  // A body at the limit is read and parsed (and then rejected as bad JSON, not as too large).
  auto c2 = h.client();
  EXPECT_EQ(c2.request(verb::post, "/v1/chat/completions", std::string(1024, ' ')).result_int(), 400);
}

TEST(GatewayServer, OversizedHeadersAre431) {
  http::ServerConfig cfg;
  cfg.max_header_bytes = 2048;
  Harness h(cfg);
  auto c = h.client();
  auto r = c.request(verb::get, "/health", {}, {{"X-Big", std::string(4096, 'a')}});
  EXPECT_EQ(r.result_int(), 431);
}

TEST(GatewayServer, MalformedRequestLineIs400) {
  Harness h;
  auto c = h.client();
  c.write_raw("GARBAGE\r\n\r\n");
  auto r = c.read();
  EXPECT_EQ(r.result_int(), 400);
}

TEST(GatewayServer, BadJsonIs400WithOpenAIErrorShape) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", "{not json");
  ASSERT_EQ(r.result_int(), 400);
  auto err = body_json(r).at("error");
  EXPECT_EQ(err.at("type").as_string(), "invalid_request_error");
  r = c.request(verb::post, "/v1/chat/completions", R"({"messages":[{"role":"user","content":5}]})");
  ASSERT_EQ(r.result_int(), 400);
  EXPECT_EQ(body_json(r).at("error").at("param").as_string(), "messages[0].content");
}

TEST(GatewayServer, BearerAuthOnEveryEndpointButHealth) {
  http::ServerConfig cfg;
  cfg.api_key = "sekret";
  Harness h(cfg);
  auto c = h.client();
  EXPECT_EQ(c.request(verb::get, "/health").result_int(), 200);
  EXPECT_EQ(c.request(verb::get, "/health/live").result_int(), 200);
  auto r = c.request(verb::get, "/v1/models");
  EXPECT_EQ(r.result_int(), 401);
  EXPECT_EQ(r[bhttp::field::www_authenticate], "Bearer");
  EXPECT_EQ(body_json(r).at("error").at("type").as_string(), "authentication_error");
  EXPECT_EQ(c.request(verb::get, "/metrics", {}, {{"Authorization", "Bearer wrong"}}).result_int(), 401);
  EXPECT_EQ(c.request(verb::get, "/metrics", {}, {{"Authorization", "Bearer sekre"}}).result_int(), 401);
  EXPECT_EQ(c.request(verb::get, "/metrics", {}, {{"Authorization", "Bearer sekret"}}).result_int(), 200);
  EXPECT_EQ(c.request(verb::get, "/v1/models", {}, {{"Authorization", "bearer sekret"}}).result_int(), 200);
}

// Without configured origins no web page gets CORS headers or a preflight, and a request that
// carries a foreign Origin is refused (before, OPTIONS answered 204 everywhere).
TEST(GatewayServer, CorsOnlyForConfiguredOrigins) {
  {
    Harness h;
    auto c = h.client();
    auto r = c.request(verb::get, "/health");
    EXPECT_EQ(r.find("Access-Control-Allow-Origin"), r.end());
    auto pre = c.request(verb::options, "/v1/chat/completions", {}, {{"Origin", "http://evil.example"}});
    EXPECT_EQ(pre.result_int(), 403);
    EXPECT_EQ(pre.find("Access-Control-Allow-Origin"), pre.end());
    EXPECT_EQ(body_json(pre).at("error").at("code").as_string(), "origin_not_allowed");
    EXPECT_EQ(c.request(verb::options, "/v1/chat/completions").result_int(), 405);
    EXPECT_EQ(
        c.request(verb::post, "/v1/chat/completions", kChatBody, {{"Origin", "http://evil.example"}}).result_int(),
        403);
  }
  http::ServerConfig cfg;
  cfg.cors_origins = {"http://app.example:3000"};
  Harness h(cfg);
  auto c = h.client();
  const std::vector<std::pair<std::string, std::string>> app{{"Origin", "http://app.example:3000"}};
  auto r = c.request(verb::get, "/nope", {}, app);
  EXPECT_EQ(r.result_int(), 404);
  EXPECT_EQ(r["Access-Control-Allow-Origin"], "http://app.example:3000");
  EXPECT_EQ(r["Vary"], "Origin");
  auto pre = c.request(verb::options, "/v1/chat/completions", {}, app);
  EXPECT_EQ(pre.result_int(), 204);
  EXPECT_EQ(pre["Access-Control-Allow-Origin"], "http://app.example:3000");
  EXPECT_NE(std::string(pre["Access-Control-Allow-Headers"]).find("Authorization"), std::string::npos);
  // Streams carry them too.
  auto s = c.request(verb::post, "/v1/chat/completions",
                     R"({"messages":[{"role":"user","content":"x"}],"stream":true,"thinking":false})", app);
  EXPECT_EQ(s.result_int(), 200);
  EXPECT_EQ(s["Access-Control-Allow-Origin"], "http://app.example:3000");
  // Requests without an Origin (SDKs, curl) get no CORS headers; other origins are refused.
  r = c.request(verb::get, "/health");
  EXPECT_EQ(r.find("Access-Control-Allow-Origin"), r.end());
  EXPECT_EQ(c.request(verb::get, "/health", {}, {{"Origin", "http://app.example"}}).result_int(), 403);
}

// DNS rebinding: a page on a name that resolves to 127.0.0.1 sends its own name as Host.
TEST(GatewayServer, HostMustBeALoopbackNameOrAllowed) {
  {
    Harness h;
    auto c = h.client();
    for (const char* ok : {"127.0.0.1:8080", "localhost", "LOCALHOST:1", "app.localhost:9", "[::1]:8080", "127.1.2.3"})
      EXPECT_EQ(c.request(verb::get, "/health", {}, {{"Host", ok}}).result_int(), 200) << ok;
    auto r = c.request(verb::get, "/health", {}, {{"Host", "rebind.attacker.example:8080"}});
    EXPECT_EQ(r.result_int(), 403);
    EXPECT_EQ(body_json(r).at("error").at("code").as_string(), "host_not_allowed");
    EXPECT_EQ(c.request(verb::get, "/health", {}, {{"Host", "127.0.0.1.attacker.example"}}).result_int(), 403);
    // HTTP/1.1 requires Host.
    c.write_raw("GET /health HTTP/1.1\r\n\r\n");
    EXPECT_EQ(c.read().result_int(), 400);
  }
  http::ServerConfig cfg;
  cfg.allowed_hosts = {"ds4.lan"};
  Harness h(cfg);
  auto c = h.client();
  EXPECT_EQ(c.request(verb::get, "/health", {}, {{"Host", "ds4.lan:8080"}}).result_int(), 200);
  EXPECT_EQ(c.request(verb::get, "/health", {}, {{"Host", "other.lan"}}).result_int(), 403);
}

// text/plain and form posts are what a web page may send cross-origin without a preflight.
TEST(GatewayServer, PostBodiesMustBeJson) {
  Harness h;
  auto c = h.client();
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    auto r = c.request(verb::post, "/v1/chat/completions", kChatBody, {{"Content-Type", type}});
    EXPECT_EQ(r.result_int(), 415) << type;
    EXPECT_EQ(body_json(r).at("error").at("code").as_string(), "unsupported_media_type");
  }
  c.write_raw("POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(c.read().result_int(), 415);  // no Content-Type at all
  auto r =
      c.request(verb::post, "/tokenize", R"({"content":"hi"})", {{"Content-Type", "Application/JSON; charset=utf-8"}});
  EXPECT_EQ(r.result_int(), 200);
}

TEST(GatewayServer, ChatCompletionNonStreamed) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", kChatBody);
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("object").as_string(), "chat.completion");
  EXPECT_EQ(v.at("model").as_string(), "m");
  auto& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("message").at("content").as_string(), "Hello there");
  EXPECT_EQ(choice.at("finish_reason").as_string(), "stop");
  auto& usage = v.at("usage");
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 11);
  // Scripted tokens are bytes: the prompt is the rendered template, the client text "Say hi".
  int64_t prompt = usage.at("prompt_tokens").as_int64();
  EXPECT_GT(prompt, 6);
  EXPECT_EQ(usage.at("protocol_tokens").as_int64(), prompt - 6);
  EXPECT_EQ(usage.at("prompt_tokens_details").at("cached_tokens").as_int64(), 0);
  EXPECT_EQ(v.at("ds4d").at("cache").at("source").as_string(), "none");
  EXPECT_EQ(v.at("ds4d").at("cache").at("prompt_tokens").as_int64(), prompt);
}

TEST(GatewayServer, ChatStreamEveryLineIsJsonAndEndsWithDone) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions",
                     R"({"messages":[{"role":"user","content":"Say hi"}],"thinking":false,"stream":true,
                         "stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(r[bhttp::field::content_type], "text/event-stream");
  auto events = HttpTestClient::sse_data(r.body());
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string content;
  std::string finish;
  bool saw_usage = false;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    auto v = json::parse(events[i]);  // throws (fails the test) on a non-JSON line
    EXPECT_EQ(v.at("object").as_string(), "chat.completion.chunk");
    auto& choices = v.at("choices").as_array();
    if (choices.empty()) {
      saw_usage = true;
      EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 11);
      continue;
    }
    auto& delta = choices[0].at("delta").as_object();
    if (auto* c2 = delta.if_contains("content")) content += c2->as_string();
    if (!choices[0].at("finish_reason").is_null()) finish = choices[0].at("finish_reason").as_string();
  }
  EXPECT_EQ(content, "Hello there");
  EXPECT_EQ(finish, "stop");
  EXPECT_TRUE(saw_usage);
}

TEST(GatewayServer, StopSequenceAndMaxTokens) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions",
                     R"({"messages":[{"role":"user","content":"x"}],"thinking":false,"stop":["o t"]})");
  ASSERT_EQ(r.result_int(), 200);
  auto v = body_json(r);
  EXPECT_EQ(v.at("choices").at(0).at("message").at("content").as_string(), "Hell");
  EXPECT_EQ(v.at("choices").at(0).at("finish_reason").as_string(), "stop");
  r = c.request(verb::post, "/v1/chat/completions",
                R"({"messages":[{"role":"user","content":"y"}],"thinking":false,"max_tokens":3})");
  v = body_json(r);
  EXPECT_EQ(v.at("choices").at(0).at("message").at("content").as_string(), "Hel");
  EXPECT_EQ(v.at("choices").at(0).at("finish_reason").as_string(), "length");
  EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 3);
}

TEST(GatewayServer, FollowUpTurnReusesTheLiveContext) {
  Harness h;
  auto c = h.client();
  auto first = body_json(c.request(verb::post, "/v1/chat/completions", kChatBody));
  ASSERT_EQ(first.at("choices").at(0).at("message").at("content").as_string(), "Hello there");
  // Echo the turn back with a new question: the rendered prompt starts with the live context.
  auto second = c.request(verb::post, "/v1/chat/completions",
                          R"({"model":"m","thinking":false,"messages":[{"role":"user","content":"Say hi"},
                              {"role":"assistant","content":"Hello there"},{"role":"user","content":"Again"}]})");
  ASSERT_EQ(second.result_int(), 200);
  auto v = body_json(second);
  int64_t cached = v.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64();
  EXPECT_GT(cached, 0);
  EXPECT_EQ(v.at("ds4d").at("cache").at("source").as_string(), "live");
  EXPECT_EQ(v.at("ds4d").at("cache").at("cached_tokens").as_int64(), cached);
}

TEST(GatewayServer, CompletionsRawModeAddsNoProtocolTokens) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/completions", R"({"prompt":"abc","raw":true,"max_tokens":5})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_EQ(v.at("object").as_string(), "text_completion");
  EXPECT_EQ(v.at("choices").at(0).at("text").as_string(), "Hello");
  EXPECT_EQ(v.at("usage").at("prompt_tokens").as_int64(), 3);
  EXPECT_EQ(v.at("usage").at("protocol_tokens").as_int64(), 0);
  // Token-id prompts, framed: the frame is protocol.
  r = c.request(verb::post, "/v1/completions", R"({"prompt":[97,98],"max_tokens":2})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  v = body_json(r);
  EXPECT_EQ(v.at("usage").at("protocol_tokens").as_int64(), v.at("usage").at("prompt_tokens").as_int64() - 2);
  r = c.request(verb::post, "/v1/completions", R"({"prompt":[97,9999]})");
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_EQ(body_json(r).at("error").at("param").as_string(), "prompt[1]");
}

TEST(GatewayServer, TokenizeAndDetokenize) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/tokenize", R"({"content":"hi"})");
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"tokens":[104,105]})");
  r = c.request(verb::post, "/detokenize", R"({"tokens":[104,105]})");
  EXPECT_EQ(r.body(), R"({"content":"hi"})");
  r = c.request(verb::post, "/detokenize", R"({"tokens":[104,300]})");
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_EQ(body_json(r).at("error").at("param").as_string(), "tokens[1]");
  // A lone UTF-8 lead byte comes back as U+FFFD, so the JSON stays valid.
  r = c.request(verb::post, "/detokenize", R"({"tokens":[195]})");
  EXPECT_EQ(body_json(r).at("content").as_string(), "\xEF\xBF\xBD");
}

// Ids above INT64_MAX used to be shown wrapped (2^64-1 as -1).
TEST(GatewayServer, DetokenizeQuotesHugeIdsAsSent) {
  Harness h;
  auto c = h.client();
  auto r = c.request(verb::post, "/detokenize", R"({"tokens":[18446744073709551615]})");
  ASSERT_EQ(r.result_int(), 400);
  std::string message(body_json(r).at("error").at("message").as_string());
  EXPECT_NE(message.find("18446744073709551615"), std::string::npos) << message;
  EXPECT_EQ(message.find("-1"), std::string::npos) << message;
}

// A /tokenize answer with pieces is ~20x its input: it is bounded, and refused with 413 beyond.
TEST(GatewayServer, TokenizeAnswerIsBounded) {
  http::ServerConfig cfg;
  cfg.max_tokenize_response_bytes = 4096;
  Harness h(cfg);
  auto c = h.client();
  std::string text(1000, 'a');
  auto r = c.request(verb::post, "/tokenize", R"({"content":")" + text + R"("})");
  EXPECT_EQ(r.result_int(), 200);  // 1000 ids: under 4 KiB
  EXPECT_EQ(body_json(r).at("tokens").as_array().size(), 1000u);
  r = c.request(verb::post, "/tokenize", R"({"content":")" + text + R"(","with_pieces":true})");
  ASSERT_EQ(r.result_int(), 413);
  EXPECT_EQ(body_json(r).at("error").at("code").as_string(), "response_too_large");
  // Pieces stay valid JSON and exact below the bound.
  r = c.request(verb::post, "/tokenize", R"({"content":"h\"i","with_pieces":true})");
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"tokens":[{"id":104,"piece":"h"},{"id":34,"piece":"\""},{"id":105,"piece":"i"}]})");
}

TEST(GatewayServer, ModelsListsTheLoadedModel) {
  Harness h;
  auto c = h.client();
  auto v = body_json(c.request(verb::get, "/v1/models"));
  EXPECT_EQ(v.at("object").as_string(), "list");
  EXPECT_EQ(v.at("data").at(0).at("id").as_string(), "scripted");
}

TEST(GatewayServer, FullQueueIs429WithRetryAfter) {
  serving::ServiceConfig scfg;
  scfg.max_queued_jobs = 1;
  Harness h({}, scfg);
  h.backend->close_gate();
  // First job: the worker takes it and blocks inside the engine.
  auto c1 = h.client();
  c1.send(verb::post, "/v1/chat/completions", kChatBody);
  ASSERT_TRUE(h.backend->wait_until_blocked(std::chrono::seconds(10)));
  // Second job waits in the queue (capacity 1).
  auto c2 = h.client();
  c2.send(verb::post, "/v1/chat/completions", kChatBody);
  ASSERT_TRUE(eventually([&] { return h.service.queued() == 1; }));
  // Third: refused.
  auto c3 = h.client();
  auto r = c3.request(verb::post, "/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.result_int(), 429);
  EXPECT_EQ(r[bhttp::field::retry_after], "2");
  EXPECT_EQ(body_json(r).at("error").at("type").as_string(), "rate_limit_error");
  EXPECT_EQ(h.metrics.rejections().value({"queue_full"}), 1);
  h.backend->open_gate();
  EXPECT_EQ(c1.read().result_int(), 200);
  EXPECT_EQ(c2.read().result_int(), 200);
}

TEST(GatewayServer, AdmissionGateRefusesWith503) {
  Harness h;
  h.service.set_admission_gate([] { return std::optional<std::string>("MemAvailable 1 GiB below the 4 GiB floor"); });
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions", kChatBody);
  EXPECT_EQ(r.result_int(), 503);
  auto err = body_json(r).at("error");
  EXPECT_EQ(err.at("code").as_string(), "memory_floor");
  EXPECT_NE(std::string(err.at("message").as_string()).find("floor"), std::string::npos);
  // Health says so (it said 200 "ok" while every generation was refused); liveness stays 200.
  auto health = c.request(verb::get, "/health");
  EXPECT_EQ(health.result_int(), 503);
  EXPECT_EQ(body_json(health).at("status").as_string(), "degraded");
  EXPECT_NE(std::string(body_json(health).at("reason").as_string()).find("floor"), std::string::npos);
  EXPECT_EQ(c.request(verb::get, "/health/live").result_int(), 200);
  h.service.set_admission_gate([] { return std::optional<std::string>(); });
  EXPECT_EQ(c.request(verb::get, "/health").result_int(), 200);
}

TEST(GatewayServer, ClientDisconnectCancelsGeneration) {
  Harness h;
  h.backend->endless = true;
  h.backend->decode_delay_ms = 2;
  {
    auto c = h.client();
    c.send(verb::post, "/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"x"}],"thinking":false,"stream":true})");
    ASSERT_TRUE(eventually([&] { return h.backend->appended_tokens > 200; }));
    c.close();
  }
  // The worker goes idle although the generation had no end of its own.
  ASSERT_TRUE(eventually([&] {
    return h.metrics.registry().render().find("ds4d_requests_running 0") != std::string::npos &&
           h.service.live_tokens() > 0;
  }));
  long after_cancel = h.backend->appended_tokens;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(h.backend->appended_tokens, after_cancel);
  // Non-streamed requests are cancelled the same way: the socket is watched while waiting.
  {
    auto c = h.client();
    c.send(verb::post, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"z"}],"thinking":false})");
    long start = h.backend->appended_tokens;
    ASSERT_TRUE(eventually([&] { return h.backend->appended_tokens > start + 100; }));
    c.close();
  }
  ASSERT_TRUE(eventually([&] {
    long now = h.backend->appended_tokens;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return h.backend->appended_tokens == now &&
           h.metrics.registry().render().find("ds4d_requests_running 0") != std::string::npos;
  }));
}

TEST(GatewayServer, StopDrainsInFlightRequests) {
  Harness h;
  h.backend->decode_delay_ms = 5;
  auto c = h.client();
  c.send(verb::post, "/v1/chat/completions", kChatBody);
  ASSERT_TRUE(eventually([&] { return h.backend->appended_tokens > 0; }));
  std::thread stopper([&] { h.server->stop(std::chrono::seconds(30)); });
  auto r = c.read();  // the in-flight request completes during the drain
  stopper.join();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(body_json(r).at("choices").at(0).at("message").at("content").as_string(), "Hello there");
  EXPECT_TRUE(c.closed_by_server());
  // No longer accepting.
  EXPECT_THROW(HttpTestClient(h.server->port()).request(verb::get, "/health"), std::exception);
}

TEST(GatewayServer, StopCancelsGenerationsThatOutlastTheDrain) {
  Harness h;
  h.backend->endless = true;
  h.backend->decode_delay_ms = 2;
  auto c = h.client();
  c.send(verb::post, "/v1/chat/completions",
         R"({"messages":[{"role":"user","content":"x"}],"thinking":false,"stream":true})");
  ASSERT_TRUE(eventually([&] { return h.backend->appended_tokens > 50; }));
  h.server->stop(std::chrono::milliseconds(100));
  // The endless generation was cancelled: the worker goes idle without a stop of its own.
  ASSERT_TRUE(
      eventually([&] { return h.metrics.registry().render().find("ds4d_requests_running 0") != std::string::npos; }));
  long after = h.backend->appended_tokens;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(h.backend->appended_tokens, after);
}

const std::string kToolReply =
    "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
const std::string kTools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";

std::string echo_request(const json::value& first, const std::string& arguments) {
  auto& msg = first.at("choices").at(0).at("message");
  auto& call = msg.at("tool_calls").at(0);
  json::object assistant{
      {"role", "assistant"},
      {"content", msg.at("content")},
      {"tool_calls",
       json::array{json::object{{"id", call.at("id")},
                                {"type", "function"},
                                {"function", json::object{{"name", "get_weather"}, {"arguments", arguments}}}}}}};
  json::object tool{{"role", "tool"}, {"tool_call_id", call.at("id")}, {"content", "sunny"}};
  json::object body = json::parse("{" + kTools + "}").as_object();
  body["thinking"] = false;
  body["messages"] = json::array{json::object{{"role", "user"}, {"content", "Weather in Paris?"}}, assistant, tool};
  return json::serialize(body);
}

TEST(GatewayServer, StrictContractsRefuseAChangedToolCallWith422) {
  http::ServerConfig cfg;
  cfg.contract_mode = "strict";
  Harness h(cfg, {}, true, kToolReply);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions",
                     R"({"thinking":false,"messages":[{"role":"user","content":"Weather in Paris?"}],)" + kTools + "}");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto first = body_json(r);
  EXPECT_EQ(first.at("choices").at(0).at("finish_reason").as_string(), "tool_calls");
  EXPECT_EQ(first.at("choices").at(0).at("message").at("content").as_string(), "Checking.");
  EXPECT_EQ(first.at("choices").at(0).at("message").at("tool_calls").at(0).at("function").at("arguments").as_string(),
            R"({"city":"Paris"})");
  // The client changed the arguments it echoes: strict mode names the message and the contract.
  r = c.request(verb::post, "/v1/chat/completions", echo_request(first, R"({"city":"Lyon"})"));
  ASSERT_EQ(r.result_int(), 422) << r.body();
  std::string message(body_json(r).at("error").at("message").as_string());
  EXPECT_NE(message.find("arguments_changed"), std::string::npos) << message;
  EXPECT_NE(message.find("1"), std::string::npos) << message;
  EXPECT_EQ(h.metrics.contract_violations().value({"arguments_changed", "strict"}), 1);
  // Echoed faithfully (whitespace may differ): accepted, replayed exactly, served from the live context.
  r = c.request(verb::post, "/v1/chat/completions", echo_request(first, R"({ "city": "Paris" })"));
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto v = body_json(r);
  EXPECT_TRUE(v.at("ds4d").at("contract").at("violations").as_array().empty());
  EXPECT_EQ(v.at("ds4d").at("contract").at("replayed_blocks").as_int64(), 1);
  EXPECT_GT(v.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(), 0);
}

TEST(GatewayServer, StreamSendsKeepAliveCommentsDuringALongPrefill) {
  serving::ServiceConfig scfg;
  scfg.prefill_chunk_tokens = 8;
  Harness h({}, scfg);
  auto c = h.client();
  auto r = c.request(verb::post, "/v1/chat/completions",
                     R"({"thinking":false,"stream":true,"messages":[{"role":"user","content":"a long question"}]})");
  ASSERT_EQ(r.result_int(), 200);
  // An SSE comment at an event boundary (the first bytes, or after a blank line).
  EXPECT_TRUE(r.body().starts_with(": prefill\n\n") || r.body().find("\n\n: prefill\n\n") != std::string::npos)
      << r.body().substr(0, 300);
  EXPECT_EQ(HttpTestClient::sse_data(r.body()).back(), "[DONE]");
}

TEST(GatewayServer, MetricsCountRequestsByEndpointAndStatus) {
  Harness h;
  auto c = h.client();
  c.request(verb::get, "/health");
  c.request(verb::get, "/nope");
  c.request(verb::post, "/v1/chat/completions", kChatBody);
  auto r = c.request(verb::get, "/metrics");
  ASSERT_EQ(r.result_int(), 200);
  EXPECT_EQ(r[bhttp::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = r.body();
  EXPECT_NE(text.find("ds4d_http_requests_total{endpoint=\"/health\",status=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ds4d_http_requests_total{endpoint=\"other\",status=\"404\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ds4d_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("ds4d_completion_tokens_total 11\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE ds4d_decode_throughput_tokens_per_second histogram\n"), std::string::npos);
  EXPECT_NE(text.find("ds4d_model_loaded 1\n"), std::string::npos);
}

}  // namespace
}  // namespace ds4::test
