// The transport on its own: a Server with routes of the test's making and no API layer. It
// serves what it is given (complete and deferred replies), and answers what no route takes in
// the error shape of the path's API.
#include "gateway/transport/server.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "gateway/serving/metrics.hpp"
#include "gateway/transport/router.hpp"
#include "tests/gateway/http_test_client.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

// A server on an ephemeral loopback port with the routes `add` registers.
struct TransportHarness {
  serving::Metrics metrics;
  std::unique_ptr<http::Server> server;
  explicit TransportHarness(const http::Server::AddRoutes& add) {
    http::ServerConfig cfg;
    cfg.port = 0;
    server = std::make_unique<http::Server>(cfg, metrics, add);
    server->start();
  }
  ~TransportHarness() { server->stop(std::chrono::milliseconds(0)); }
  HttpTestClient client() { return HttpTestClient(server->port()); }
};

TEST(Transport, ServesTheRoutesItIsGivenAndNothingElse) {
  std::string seen_path;
  TransportHarness h([&](http::Router& router, const http::ServerConfig& config) {
    EXPECT_EQ(config.port, 0);  // the server's own copy of the configuration
    router.add("GET", "/ping", [&](http::RequestContext& ctx) {
      seen_path = std::string(ctx.path);
      return http::Reply::text(200, "text/plain", "pong");
    });
  });
  auto c = h.client();
  auto r = c.request(verb::get, "/ping?x=1");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "pong");
  EXPECT_EQ(seen_path, "/ping");
  // No route: 404, in the OpenAI error shape, or in Anthropic's under /v1/messages.
  auto missing = c.request(verb::get, "/v1/chat/completions");
  EXPECT_EQ(missing.result_int(), 404);
  EXPECT_TRUE(json::parse(missing.body()).at("error").as_object().contains("message"));
  auto anthropic = c.request(verb::get, "/v1/messages");
  EXPECT_EQ(anthropic.result_int(), 404);
  EXPECT_EQ(json::parse(anthropic.body()).at("type").as_string(), "error");
  EXPECT_EQ(json::parse(anthropic.body()).at("error").at("type").as_string(), "not_found_error");
}

TEST(Transport, ADeferredReplyIsStreamedFromAnotherThread) {
  std::thread producer;
  TransportHarness h([&](http::Router& router, const http::ServerConfig&) {
    router.add("GET", "/stream", [&](http::RequestContext& ctx) {
      auto channel = std::make_shared<http::ResponseChannel>(ctx.executor);
      producer = std::thread([channel] {
        http::ResponseHead head;
        head.headers.emplace_back("Content-Type", "text/plain");
        head.streaming = true;
        channel->send_head(std::move(head));
        for (const char* part : {"one ", "two ", "three"}) channel->send_chunk(part);
        channel->finish();
      });
      return http::Reply::deferred(channel);
    });
  });
  auto c = h.client();
  auto r = c.request(verb::get, "/stream");
  producer.join();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_TRUE(r.chunked());
  EXPECT_EQ(r.body(), "one two three");
}

}  // namespace
}  // namespace ds4::test
