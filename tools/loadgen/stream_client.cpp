// The Beast streaming client; see stream_client.hpp.
//
// Each request is written on the client's keep-alive connection with one absolute deadline
// (request_timeout) covering write, header and every body byte, so a server that stops
// talking is reported as hung, never waited on forever. The SSE body is split into events as
// bytes arrive; an event whose delta carries content, reasoning or a tool call is a token
// event, and its arrival time feeds TTFT (first one) and inter-token latency (the gaps).
#include "tools/loadgen/stream_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <optional>

namespace ds4::load {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Incremental SSE reader: feed bytes, it reports each complete "data:" payload.
class SseEvents {
 public:
  template <class F>
  void feed(std::string_view bytes, F&& on_data) {
    pending_.append(bytes);
    size_t start = 0;
    for (;;) {
      const size_t end = pending_.find("\n\n", start);
      if (end == std::string::npos) break;
      std::string_view event(pending_.data() + start, end - start);
      // One event may hold several lines; only data lines matter (": comment" lines are keep-alives).
      size_t ls = 0;
      while (ls <= event.size()) {
        size_t le = event.find('\n', ls);
        if (le == std::string_view::npos) le = event.size();
        std::string_view line = event.substr(ls, le - ls);
        if (line.starts_with("data: ")) on_data(line.substr(6));
        ls = le + 1;
      }
      start = end + 2;
    }
    pending_.erase(0, start);
  }
  bool empty() const { return pending_.empty(); }

 private:
  std::string pending_;
};

// True when a chat.completion.chunk carries generated text or a tool call.
bool is_token_event(std::string_view data) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(data, ec);
  if (ec || !v.is_object()) return false;
  const auto* choices = v.as_object().if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) return false;
  const auto& c0 = choices->as_array()[0];
  if (!c0.is_object()) return false;
  const auto* delta = c0.as_object().if_contains("delta");
  if (!delta || !delta->is_object()) return false;
  for (const char* key : {"content", "reasoning_content"}) {
    const auto* s = delta->as_object().if_contains(key);
    if (s && s->is_string() && !s->as_string().empty()) return true;
  }
  return delta->as_object().contains("tool_calls");
}

void note_drop(ClientCounters& out, const std::string& why) {
  ++out.dropped;
  if (out.drop_examples.size() < 4) out.drop_examples.push_back(why);
}

}  // namespace

net::awaitable<void> run_stream_client(const ClientPlan& plan, ClientCounters& out, unsigned seed) {
  auto ex = co_await net::this_coro::executor;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  std::optional<beast::tcp_stream> conn;  // re-created for every new connection
  bool connected = false;
  beast::flat_buffer buffer;
  net::steady_timer pause(ex);
  auto backoff = [&](std::chrono::milliseconds base) -> net::awaitable<void> {
    pause.expires_after(std::chrono::milliseconds(static_cast<long>(static_cast<double>(base.count()) * jitter(rng))));
    co_await pause.async_wait(kNoThrow);
  };

  bhttp::request<bhttp::string_body> req{bhttp::verb::post, plan.target, 11};
  req.set(bhttp::field::host, plan.host_header);
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::user_agent, "ds4d-load");
  req.keep_alive(true);
  req.body() = plan.body;
  req.prepare_payload();

  while (Clock::now() < plan.deadline) {
    if (!connected) {
      beast::error_code ec;
      conn.emplace(ex);
      conn->expires_after(std::chrono::seconds(10));
      std::tie(ec) = co_await conn->async_connect(plan.endpoint, kNoThrow);
      if (ec) {
        ++out.connect_errors;
        co_await backoff(std::chrono::milliseconds(200));
        continue;
      }
      connected = true;
      ++out.connections;
      buffer.clear();
    }
    beast::tcp_stream& stream = *conn;
    const auto t0 = Clock::now();
    stream.expires_after(plan.request_timeout);  // one deadline for the whole exchange
    beast::error_code ec;
    std::tie(ec, std::ignore) = co_await bhttp::async_write(stream, req, kNoThrow);
    ++out.sent;
    if (ec) {
      note_drop(out, "write failed: " + ec.message());
      if (ec == beast::error::timeout) ++out.hung;
      connected = false;
      continue;
    }
    bhttp::response_parser<bhttp::buffer_body> parser;
    parser.body_limit(boost::none);
    std::tie(ec, std::ignore) = co_await bhttp::async_read_header(stream, buffer, parser, kNoThrow);
    if (ec) {
      note_drop(out, "no response: " + ec.message());
      if (ec == beast::error::timeout) ++out.hung;
      connected = false;
      continue;
    }
    const unsigned status = parser.get().result_int();
    ++out.statuses[status];
    const bool sse = parser.get()[bhttp::field::content_type].starts_with("text/event-stream");
    SseEvents events;
    bool done = false, finished = false;
    Clock::time_point last_token{};
    std::string plain;  // a non-streamed body (or error JSON), kept to check it is complete
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      // read_some, not read: read would wait until the 16 KiB chunk is full, batching every event.
      std::tie(ec, std::ignore) = co_await bhttp::async_read_some(stream, buffer, parser, kNoThrow);
      if (ec == bhttp::error::need_buffer) ec = {};
      const size_t got = sizeof chunk - parser.get().body().size;
      if (got > 0) {
        const auto now = Clock::now();
        std::string_view bytes(chunk, got);
        if (!sse) {
          plain.append(bytes);
        } else {
          events.feed(bytes, [&](std::string_view data) {
            if (data == "[DONE]") {
              done = true;
              return;
            }
            if (data.find("\"finish_reason\":\"") != std::string_view::npos) finished = true;
            if (!is_token_event(data)) return;
            ++out.tokens;
            if (last_token == Clock::time_point{}) out.ttft_ms.push_back(ms_between(t0, now));
            else out.itl_ms.push_back(ms_between(last_token, now));
            last_token = now;
          });
        }
      }
      if (ec) break;
    }
    const bool keep_alive = !ec && parser.is_done() && parser.get().keep_alive();
    if (ec) {
      note_drop(out, "status " + std::to_string(status) + ", body cut: " + ec.message());
      if (ec == beast::error::timeout) ++out.hung;
      connected = false;
      continue;
    }
    if (status == 200) {
      bool complete = true;
      if (plan.stream) complete = sse && done && finished;
      else {
        boost::system::error_code jec;
        boost::json::parse(plain, jec);
        complete = !jec && plain.find("\"finish_reason\"") != std::string::npos;
      }
      if (complete) ++out.completed;
      else note_drop(out, plan.stream ? "stream ended without finish_reason and [DONE]" : "incomplete JSON body");
    } else if (status == 429 || status == 503) {
      ++(status == 429 ? out.status_429 : out.status_503);
    } else {
      ++out.other_status;
    }
    if (!keep_alive) {
      beast::error_code ignored;
      stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
      stream.close();
      connected = false;
    }
    if (status == 429 || status == 503) {
      // A short jittered pause, not Retry-After (seconds): the run keeps offering load, since
      // the point is to measure how refusals behave, not to wait them out.
      co_await backoff(plan.refusal_backoff);
    }
  }
  if (connected) {
    beast::error_code ignored;
    conn->socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    conn->close();
  }
}

}  // namespace ds4::load
