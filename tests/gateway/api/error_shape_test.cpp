// Errors raised before an endpoint runs (connection: 400/413/431/503; router: 401/403/404/405/415)
// come in the shape of the API the path belongs to; duplicate Host headers are refused; identifier
// fields are bounded. Raw HTTP over loopback, so that nothing a client library does hides a shape.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;

const std::string kMessagesBody = R"({"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";

// Anthropic's error envelope: {"type":"error","error":{"type":...,"message":...}}.
void expect_anthropic(const HttpTestClient::Response& r, unsigned status, std::string_view type) {
  EXPECT_EQ(r.result_int(), status) << r.body();
  json::value v = json::parse(r.body());
  ASSERT_TRUE(v.is_object()) << r.body();
  EXPECT_EQ(v.at("type").as_string(), "error") << r.body();
  EXPECT_EQ(v.at("error").at("type").as_string(), type) << r.body();
  EXPECT_TRUE(v.at("error").at("message").is_string()) << r.body();
}

// OpenAI's: {"error":{"message","type","param","code"}} and no top-level "type".
void expect_openai(const HttpTestClient::Response& r, unsigned status) {
  EXPECT_EQ(r.result_int(), status) << r.body();
  json::value v = json::parse(r.body());
  ASSERT_TRUE(v.is_object()) << r.body();
  EXPECT_EQ(v.as_object().if_contains("type"), nullptr) << r.body();
  EXPECT_TRUE(v.at("error").at("message").is_string()) << r.body();
  EXPECT_TRUE(v.at("error").as_object().contains("param")) << r.body();
}

HttpTestClient::Response raw(Harness& h, const std::string& bytes) {
  HttpTestClient c(h.server->port());
  c.write_raw(bytes);
  return c.read();
}

std::string post_head(const std::string& path, size_t length, const std::string& extra = {}) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(length) + "\r\n\r\n";
}

TEST(GatewayErrorShape, RouterRefusalsOnMessagesAreAnthropicShaped) {
  http::ServerConfig cfg;
  cfg.api_key = "sekret";
  Harness h(cfg);
  auto c = h.client();
  // 401: no key.
  expect_anthropic(c.request(bhttp::verb::post, "/v1/messages?beta=true", kMessagesBody), 401, "authentication_error");
  const std::vector<std::pair<std::string, std::string>> key{{"x-api-key", "sekret"}};
  // 403: a foreign Origin.
  auto with_origin = key;
  with_origin.emplace_back("Origin", "http://evil.example");
  expect_anthropic(c.request(bhttp::verb::post, "/v1/messages", kMessagesBody, with_origin), 403, "permission_error");
  // 404 below /v1/messages, 405 on it, 415 for a form post.
  expect_anthropic(c.request(bhttp::verb::post, "/v1/messages/count_tokens", kMessagesBody, key), 404,
                   "not_found_error");
  expect_anthropic(c.request(bhttp::verb::get, "/v1/messages", {}, key), 405, "invalid_request_error");
  auto form = key;
  form.emplace_back("Content-Type", "text/plain");
  expect_anthropic(c.request(bhttp::verb::post, "/v1/messages", kMessagesBody, form), 415, "invalid_request_error");
  // The same refusals elsewhere stay OpenAI-shaped; a path that only starts like it too.
  expect_openai(c.request(bhttp::verb::post, "/v1/chat/completions", kMessagesBody), 401);
  expect_openai(c.request(bhttp::verb::post, "/v1/responses", kMessagesBody), 401);
  expect_openai(c.request(bhttp::verb::post, "/v1/completions", kMessagesBody), 401);
  expect_openai(c.request(bhttp::verb::get, "/v1/messagesx", {}, key), 404);
}

TEST(GatewayErrorShape, HostRefusalsOnMessagesAreAnthropicShaped) {
  Harness h;
  auto c = h.client();
  expect_anthropic(c.request(bhttp::verb::post, "/v1/messages", kMessagesBody, {{"Host", "rebind.example"}}), 403,
                   "permission_error");
  expect_openai(c.request(bhttp::verb::post, "/v1/chat/completions", kMessagesBody, {{"Host", "rebind.example"}}), 403);
}

TEST(GatewayErrorShape, ConnectionRefusalsOnMessagesAreAnthropicShaped) {
  http::ServerConfig cfg;
  cfg.max_body_bytes = 1024;
  cfg.max_header_bytes = 2048;
  Harness h(cfg);
  // 413: the body is over the limit (refused once the header is read).
  expect_anthropic(raw(h, post_head("/v1/messages", 4096) + std::string(4096, ' ')), 413, "request_too_large");
  expect_openai(raw(h, post_head("/v1/chat/completions", 4096) + std::string(4096, ' ')), 413);
  // 431: the header is over the limit (refused before it is parsed).
  const std::string big = "X-Big: " + std::string(4096, 'a') + "\r\n";
  expect_anthropic(raw(h, post_head("/v1/messages", 2, big) + "{}"), 431, "invalid_request_error");
  expect_openai(raw(h, post_head("/v1/responses", 2, big) + "{}"), 431);
  // 400: a malformed header (a field without a colon).
  expect_anthropic(raw(h, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n"), 400,
                   "invalid_request_error");
  expect_openai(raw(h, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n"), 400);
  // 400 / 501: transfer codings.
  expect_anthropic(raw(h, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
                   501, "api_error");
}

TEST(GatewayErrorShape, BodyBudgetRefusalOnMessagesIsAnthropicShaped) {
  http::ServerConfig cfg;
  cfg.max_inflight_body_bytes = 1000;
  Harness h(cfg);
  // A declared body over the whole budget is refused (503, Retry-After) before it is read.
  auto r = raw(h, post_head("/v1/messages", 5000));
  expect_anthropic(r, 503, "overloaded_error");
  EXPECT_EQ(r["Retry-After"], "1");
  expect_openai(raw(h, post_head("/v1/chat/completions", 5000)), 503);
}

// RFC 9112 3.2: more than one Host field is 400, whichever of them is allowed.
TEST(GatewayErrorShape, DuplicateHostIs400) {
  for (bool keyed : {false, true}) {
    http::ServerConfig cfg;
    if (keyed) cfg.api_key = "sekret";
    Harness h(cfg);
    const std::string auth = keyed ? "Authorization: Bearer sekret\r\n" : "";
    auto r = raw(h, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n" + auth + "\r\n");
    expect_openai(r, 400);
    EXPECT_EQ(json::parse(r.body()).at("error").at("code").as_string(), "duplicate_host");
    r = raw(h, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n");
    EXPECT_EQ(r.result_int(), 400);
    auto m = raw(h, post_head("/v1/messages", kMessagesBody.size(), "Host: localhost\r\n" + auth) + kMessagesBody);
    expect_anthropic(m, 400, "invalid_request_error");
    // One Host is served.
    EXPECT_EQ(raw(h, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n").result_int(), 200);
  }
}

// A 1 MB model name used to be accepted and echoed in the response.
TEST(GatewayRequestLimits, LongIdentifiersAre400NamingTheFieldWithoutEchoingIt) {
  Harness h;
  auto c = h.client();
  const std::string huge(1 << 20, 'm');
  struct Case {
    std::string path, body, param;
  };
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const std::string long_name(257, 'n'), long_id(1025, 'i'), long_stop(1025, 's');
  std::string many_stops = "[";
  for (int i = 0; i < 17; ++i) many_stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  many_stops += "]";
  const std::vector<Case> cases = {
      {"/v1/chat/completions", R"({"model":")" + huge + "\"," + msgs + "}", "model"},
      {"/v1/messages", R"({"model":")" + huge + R"(","max_tokens":4,)" + msgs + "}", "model"},
      {"/v1/responses", R"({"model":")" + huge + R"(","input":"hi"})", "model"},
      {"/v1/completions", R"({"model":")" + huge + R"(","prompt":"hi"})", "model"},
      {"/v1/chat/completions", R"({"model":")" + long_name + "\"," + msgs + "}", "model"},
      {"/v1/chat/completions",
       "{" + msgs + R"(,"tools":[{"type":"function","function":{"name":"ok","parameters":{}}},)" +
           R"({"type":"function","function":{"name":")" + long_name + R"(","parameters":{}}}]})",
       "tools[1].function.name"},
      {"/v1/messages",
       R"({"max_tokens":4,)" + msgs + R"(,"tools":[{"name":")" + long_name + R"(","input_schema":{}}]})",
       "tools[0].name"},
      {"/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":")" + long_id +
           R"(","type":"function","function":{"name":"f","arguments":"{}"}}]}]})",
       "messages[1].tool_calls[0].id"},
      {"/v1/chat/completions", R"({"messages":[{"role":"tool","tool_call_id":")" + long_id + R"(","content":"x"}]})",
       "messages[0].tool_call_id"},
      {"/v1/messages",
       R"({"max_tokens":4,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":")" + long_id +
           R"(","content":"x"}]}]})",
       "messages[0].content[0].tool_use_id"},
      {"/v1/responses", R"({"input":"hi","previous_response_id":")" + long_id + "\"}", "previous_response_id"},
      {"/v1/responses", R"({"input":[{"type":"function_call_output","call_id":")" + long_id + R"(","output":"x"}]})",
       "input[0].call_id"},
      {"/v1/messages", R"({"max_tokens":4,)" + msgs + R"(,"metadata":{"user_id":")" + long_id + "\"}}",
       "metadata.user_id"},
      {"/v1/chat/completions", "{" + msgs + R"(,"user":")" + long_id + "\"}", "user"},
      {"/v1/chat/completions", "{" + msgs + R"(,"stop":")" + long_stop + "\"}", "stop"},
      {"/v1/chat/completions", "{" + msgs + R"(,"stop":["a",")" + long_stop + "\"]}", "stop[1]"},
      {"/v1/chat/completions", "{" + msgs + R"(,"stop":)" + many_stops + "}", "stop"},
      {"/v1/messages", R"({"max_tokens":4,)" + msgs + R"(,"stop_sequences":)" + many_stops + "}", "stop_sequences"},
  };
  for (const Case& k : cases) {
    auto r = c.request(bhttp::verb::post, k.path, k.body);
    ASSERT_EQ(r.result_int(), 400) << k.path << " " << k.param;
    EXPECT_LT(r.body().size(), 1000u) << k.param;  // the value is not echoed
    json::value v = json::parse(r.body());
    EXPECT_EQ(v.at("error").at("param").as_string(), k.param) << r.body();
    if (k.path == "/v1/messages") {
      EXPECT_EQ(v.at("type").as_string(), "error");
    }
  }
  // At the bounds the requests are served.
  const std::string name(256, 'n');
  EXPECT_EQ(
      c.request(bhttp::verb::post, "/v1/chat/completions", R"({"model":")" + name + "\",\"max_tokens\":2," + msgs + "}")
          .result_int(),
      200);
  std::string sixteen = "[";
  for (int i = 0; i < 16; ++i) sixteen += std::string(i ? "," : "") + "\"" + std::string(1024, 'a' + i) + "\"";
  sixteen += "]";
  EXPECT_EQ(
      c.request(bhttp::verb::post, "/v1/chat/completions", "{" + msgs + R"(,"max_tokens":2,"stop":)" + sixteen + "}")
          .result_int(),
      200);
}

}  // namespace
}  // namespace ds4::test
