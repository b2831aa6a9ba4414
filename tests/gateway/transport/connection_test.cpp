// Connection handling over raw loopback sockets: requests whose header and body arrive in
// separate writes, clients that half-close after the request, keep-alive loops. Each test here
// reproduces a way the gateway used to drop a response without a word.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using bhttp::verb;

const std::string kBody = R"({"messages":[{"role":"user","content":"hi"}],"thinking":false,"max_tokens":4})";
const std::string kStreamBody =
    R"({"messages":[{"role":"user","content":"hi"}],"thinking":false,"max_tokens":4,"stream":true})";

std::string request_head(const std::string& body, bool keep_alive) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n" + (keep_alive ? "" : "Connection: close\r\n") + "\r\n";
}

void pause_us(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The reactor may report a socket readable for bytes that an earlier read already took (the body
// of a request sent in two writes). The disconnect watch used to take that for a hang-up: a few
// percent of such requests got no answer. Gaps between the writes vary so that the body lands
// both before and after the server's first read.
TEST(GatewayConnection, HeaderAndBodyInSeparateWritesAreAllAnswered) {
  Harness h;
  std::mt19937 rng(7);
  int dropped = 0, answered = 0;
  auto c = std::make_unique<HttpTestClient>(h.server->port());
  for (int i = 0; i < 300; ++i) {
    const std::string& body = (i % 2) ? kStreamBody : kBody;
    try {
      c->write_raw(request_head(body, true));
      pause_us(static_cast<int>(rng() % 300));
      c->write_raw(body);
      auto r = c->read();
      EXPECT_EQ(r.result_int(), 200);
      ++answered;
    } catch (const std::exception&) {
      ++dropped;
      c = std::make_unique<HttpTestClient>(h.server->port());
    }
  }
  EXPECT_EQ(dropped, 0) << answered << " answered";
  EXPECT_EQ(h.metrics.registry().render().find("status=\"499\""), std::string::npos);
}

// A client that sends its request and shuts down its sending side still reads the answer.
TEST(GatewayConnection, HalfCloseAfterTheRequestStillGetsTheAnswer) {
  Harness h;
  h.backend->decode_delay_ms = 5;  // the FIN arrives while the reply is being generated
  for (const std::string& body : {kBody, kStreamBody}) {
    HttpTestClient c(h.server->port());
    c.write_raw(request_head(body, true) + body);
    c.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send);
    auto r = c.read();
    ASSERT_EQ(r.result_int(), 200) << body;
    if (body == kBody) {
      EXPECT_EQ(body_json(r).at("choices").at(0).at("message").at("content").as_string(), "Hell");
    } else {
      EXPECT_EQ(HttpTestClient::sse_data(r.body()).back(), "[DONE]");
    }
    EXPECT_TRUE(c.closed_by_server());  // nothing more can come: the connection ends after the answer
  }
  // HTTP/1.0 clients (the classic half-closers) get no interim response.
  HttpTestClient c(h.server->port());
  c.write_raw("POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(kBody.size()) + "\r\n\r\n" + kBody);
  c.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send);
  auto r = c.read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(c.interim_responses, 0);
}

// Clients that close while their job waits in the queue give their slot back at once: before,
// they kept it until the worker reached them, and everyone else got 429 meanwhile.
TEST(GatewayConnection, ClientsThatLeaveTheQueueFreeTheirSlots) {
  serving::ServiceConfig scfg;
  scfg.max_queued_jobs = 2;
  Harness h({}, scfg);
  h.backend->close_gate();
  HttpTestClient running(h.server->port());
  running.write_raw(request_head(kBody, true) + kBody);
  ASSERT_TRUE(h.backend->wait_until_blocked(std::chrono::seconds(10)));
  {
    HttpTestClient q1(h.server->port()), q2(h.server->port());
    q1.write_raw(request_head(kBody, true) + kBody);
    q2.write_raw(request_head(kBody, true) + kBody);
    ASSERT_TRUE(eventually([&] { return h.service.queued() == 2; }));
    q1.close();
    q2.close();
  }
  // Their cancellation reaches the service (the watch tells a closed client from a half-closed one).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  HttpTestClient next1(h.server->port()), next2(h.server->port());
  next1.write_raw(request_head(kBody, true) + kBody);
  next2.write_raw(request_head(kBody, true) + kBody);
  ASSERT_TRUE(eventually([&] { return h.service.queued() == 2; }));
  EXPECT_EQ(h.metrics.rejections().value({"queue_full"}), 0);
  h.backend->open_gate();
  EXPECT_EQ(running.read().result_int(), 200);
  EXPECT_EQ(next1.read().result_int(), 200);
  EXPECT_EQ(next2.read().result_int(), 200);
}

// A body framed by an unknown or misplaced transfer coding used to be read as bodyless, its
// bytes then parsed as the next request (smuggling behind a proxy that frames it otherwise).
TEST(GatewayConnection, TransferEncodingIsStrict) {
  Harness h;
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  struct Case {
    std::string headers;
    unsigned status;
  };
  for (const Case& k :
       {Case{"Transfer-Encoding: xchunked\r\n", 501}, Case{"Transfer-Encoding: chunked, identity\r\n", 501},
        Case{"Transfer-Encoding: gzip, chunked\r\n", 501}, Case{"Transfer-Encoding: chunked, chunked\r\n", 400},
        Case{"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n", 501},
        Case{"Transfer-Encoding: ,\r\n", 400}, Case{"Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n", 400}}) {
    HttpTestClient c(h.server->port());
    c.write_raw("POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n" + k.headers + "\r\n" + smuggled);
    auto r = c.read();
    EXPECT_EQ(r.result_int(), k.status) << k.headers;
    EXPECT_FALSE(r.keep_alive()) << k.headers;
    EXPECT_TRUE(c.closed_by_server()) << k.headers;  // the smuggled request is never answered
  }
  // HTTP/1.0 has no transfer codings.
  HttpTestClient c0(h.server->port());
  c0.write_raw("POST /tokenize HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(c0.read().result_int(), 400);
  // Plain chunked still works, in any letter case.
  HttpTestClient ok(h.server->port());
  std::string body = R"({"content":"hi"})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  ok.write_raw(
      "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: Chunked\r\n\r\n" +
      std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  auto r = ok.read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), R"({"tokens":[104,105]})");
}

// HEAD is GET without the body: same status and headers (Content-Length included).
TEST(GatewayConnection, HeadIsServedForGetRoutes) {
  Harness h;
  auto c = h.client();
  auto get = c.request(verb::get, "/health");
  ASSERT_EQ(get.result_int(), 200);
  c.write_raw("HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  bhttp::response_parser<bhttp::empty_body> parser;
  parser.skip(true);  // a HEAD answer has no body, whatever its Content-Length says
  boost::beast::flat_buffer buffer;
  bhttp::read(c.socket(), buffer, parser);
  EXPECT_EQ(parser.get().result_int(), 200);
  EXPECT_EQ(parser.get()[bhttp::field::content_length], std::to_string(get.body().size()));
  EXPECT_EQ(parser.get()[bhttp::field::content_type], "application/json");
  // The connection stays usable: no stray body bytes precede the next answer.
  c.write_raw("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  bhttp::response_parser<bhttp::string_body> next;
  bhttp::read(c.socket(), buffer, next);
  EXPECT_EQ(next.get().result_int(), 200);
  EXPECT_EQ(next.get().body(), R"({"status":"alive"})");
  // A POST-only route lists its method; a GET route lists HEAD with it.
  auto r = c.request(verb::post, "/health", "{}");
  EXPECT_EQ(r.result_int(), 405);
  EXPECT_EQ(r[bhttp::field::allow], "GET, HEAD");
}

// Past the drain time the server used to cut streams without a final event and close queued
// clients' connections without a word. Now the stream ends with its finish chunk and [DONE], and
// a client that has received nothing gets 503.
TEST(GatewayConnection, StopPastTheDrainAnswersEveryone) {
  Harness h;
  h.backend->endless = true;
  h.backend->decode_delay_ms = 2;
  HttpTestClient streaming(h.server->port());
  const std::string endless = R"({"messages":[{"role":"user","content":"x"}],"thinking":false,"stream":true})";
  streaming.write_raw(request_head(endless, true) + endless);
  ASSERT_TRUE(eventually([&] { return h.backend->appended_tokens > 50; }));
  HttpTestClient queued(h.server->port());
  queued.write_raw(request_head(kBody, true) + kBody);
  ASSERT_TRUE(eventually([&] { return h.service.queued() == 1; }));
  std::thread stopper([&] { h.server->stop(std::chrono::milliseconds(100)); });
  auto s = streaming.read();
  auto q = queued.read();
  stopper.join();
  EXPECT_EQ(s.result_int(), 200);
  auto events = HttpTestClient::sse_data(s.body());
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  auto last = json::parse(events[events.size() - 2]);
  EXPECT_EQ(last.at("choices").at(0).at("finish_reason").as_string(), "error");
  EXPECT_EQ(q.result_int(), 503);
  EXPECT_EQ(body_json(q).at("error").at("code").as_string(), "shutting_down");
  EXPECT_FALSE(q.keep_alive());
}

// At the connection cap the longest-idle keep-alive connection makes room; when every
// connection is busy a newcomer gets 503 at once (before, there was no cap at all).
TEST(GatewayConnection, ConnectionCapShedsIdleConnectionsFirst) {
  http::ServerConfig cfg;
  cfg.max_connections = 2;
  Harness h(cfg);
  auto a = h.client();
  ASSERT_EQ(a.request(verb::get, "/health/live").result_int(), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto b = h.client();
  ASSERT_EQ(b.request(verb::get, "/health/live").result_int(), 200);
  auto c = h.client();  // third: `a`, idle longest, is closed to make room
  EXPECT_EQ(c.request(verb::get, "/health").result_int(), 200);
  EXPECT_TRUE(a.closed_by_server());
  EXPECT_EQ(b.request(verb::get, "/health/live").result_int(), 200);
  // Both open connections busy: the newcomer is refused.
  h.backend->close_gate();
  b.write_raw(request_head(kBody, true) + kBody);
  ASSERT_TRUE(h.backend->wait_until_blocked(std::chrono::seconds(10)));
  c.write_raw(request_head(kBody, true) + kBody);
  ASSERT_TRUE(eventually([&] { return h.service.queued() == 1; }));
  auto d = h.client();
  auto r = d.read();
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(body_json(r).at("error").at("code").as_string(), "too_many_connections");
  h.backend->open_gate();
  EXPECT_EQ(b.read().result_int(), 200);
  EXPECT_EQ(c.read().result_int(), 200);
}

// Request bodies held at once are bounded: unfinished bodies used to add up without limit.
TEST(GatewayConnection, InFlightBodyBytesAreBudgeted) {
  http::ServerConfig cfg;
  cfg.max_inflight_body_bytes = 1 << 20;
  Harness h(cfg);
  // Two clients start 600 KiB bodies and stall halfway: the second does not fit beside the first.
  const size_t size = 600 << 10;
  auto head = [&](size_t n) {
    return "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(n) + "\r\n\r\n";
  };
  auto first = h.client();
  first.write_raw(head(size) + std::string(1000, ' '));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto second = h.client();
  second.write_raw(head(size));
  auto r = second.read();
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r[bhttp::field::retry_after], "1");
  // A chunked body is counted as it grows.
  auto chunked = h.client();
  char line[32];
  std::snprintf(line, sizeof line, "%zx\r\n", size);
  chunked.write_raw(
      "POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      std::string(line) + std::string(size, ' ') + "\r\n");
  EXPECT_EQ(chunked.read().result_int(), 503);
  // Once the first body is gone its bytes are free again.
  first.close();
  ASSERT_TRUE(eventually([&] {
    auto c = h.client();
    std::string body = R"({"content":"hi"})" + std::string(size - 16, ' ');
    c.write_raw(head(body.size()) + body);
    return c.read().result_int() == 200;
  }));
}

// Parsing, rendering and tokenizing run on the handler pool: heavy requests no longer hold up
// /health on the io threads. The bound is a ratio to idle /health: measured x13 with the pool,
// x1270 with the handlers on the io threads. On a loaded machine (ctest -j8 on 2 cores) one
// round of probes can land in a scheduling stall (x225 once), so up to three rounds are taken
// and the best must be within the bound: handlers on the io threads block every round.
TEST(GatewayConnection, HealthStaysFastWhileHeavyRequestsAreParsed) {
  Harness h;
  // ~6 MB of JSON that takes a while to parse and tokenize.
  std::string heavy = R"({"content":")";
  for (int i = 0; i < 200000; ++i) heavy += "word " + std::to_string(i % 97) + " \\u00e9 ";
  heavy += R"("})";
  auto time_one = [&](HttpTestClient& c, const std::string& target, const std::string& body) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = body.empty() ? c.request(verb::get, target) : c.request(verb::post, target, body);
    EXPECT_EQ(r.result_int(), 200) << target;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto probe = h.client();
  std::vector<double> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(time_one(probe, "/health", {}));
  const double idle_p50 = median(idle);
  std::atomic<bool> done{false};
  std::atomic<int> heavy_done{0};
  std::vector<double> heavy_times[4];
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t)
    load.emplace_back([&, t] {
      auto c = h.client();
      while (!done) {
        heavy_times[t].push_back(time_one(c, "/tokenize", heavy));
        ++heavy_done;
      }
    });
  // The heavy clients are in their loop (each has been answered once), not still starting.
  ASSERT_TRUE(eventually([&] { return heavy_done >= 4; }));
  double best = 0;
  std::string rounds;
  for (int round = 0; round < 3; ++round) {
    std::vector<double> loaded;
    for (int i = 0; i < 20; ++i) {
      loaded.push_back(time_one(probe, "/health", {}));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double p50 = median(loaded);
    rounds += (round ? ", " : "") + std::to_string(p50 * 1e3) + " ms";
    best = round == 0 ? p50 : std::min(best, p50);
    if (best < 200 * idle_p50) break;
  }
  done = true;
  for (auto& t : load) t.join();
  std::vector<double> heavy_all;
  for (auto& v : heavy_times) heavy_all.insert(heavy_all.end(), v.begin(), v.end());
  ASSERT_FALSE(heavy_all.empty());
  std::printf("health p50 idle %.3f ms, under load %s (best x%.1f); one heavy request %.1f ms\n", idle_p50 * 1e3,
              rounds.c_str(), best / idle_p50, median(heavy_all) * 1e3);
  EXPECT_LT(best, 200 * idle_p50);
}

}  // namespace
}  // namespace ds4::test
