// One client connection: read, dispatch, write, keep-alive, limits, timeouts, disconnect watch.
// See connection.hpp.
#include "gateway/transport/connection.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "gateway/serving/metrics.hpp"

namespace ds4::http {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using net::ip::tcp;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

template <class Body>
void apply_head(bhttp::response<Body>& res, ResponseHead& head, bool keep_alive) {
  for (auto& [name, value] : head.headers) res.set(name, value);
  res.set(bhttp::field::server, "ds4d");
  res.keep_alive(keep_alive);
}

// What a socket says about its peer, without taking any bytes.
enum class PeerState {
  Quiet,       // nothing new (a spurious wake-up)
  Data,        // bytes to read (a pipelined request)
  HalfClosed,  // the peer shut down its sending side (FIN); it may still read
  Gone,        // reset or closed for good
};

PeerState peer_state(tcp::socket& socket) {
  pollfd p{socket.native_handle(), POLLIN | POLLRDHUP, 0};
  int r = ::poll(&p, 1, 0);
  if (r < 0) return errno == EINTR ? PeerState::Quiet : PeerState::Gone;
  if (r == 0) return PeerState::Quiet;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return PeerState::Gone;
  beast::error_code ec;
  size_t available = socket.available(ec);
  if (ec) return PeerState::Gone;
  if (available > 0) return PeerState::Data;
  if (p.revents & POLLRDHUP) return PeerState::HalfClosed;
  return PeerState::Quiet;
}

// RFC 9112 6.1/6.3: a request body framed by Transfer-Encoding must end with `chunked`, applied
// once; we decode no other coding. A message with both Transfer-Encoding and Content-Length, or
// Transfer-Encoding in HTTP/1.0, is refused: a proxy in front may frame it differently (request
// smuggling). Returns the reason to refuse ("" : acceptable) and the status (400 or 501).
std::pair<unsigned, std::string> transfer_encoding_problem(const HttpRequest& req) {
  std::vector<std::string> codings;
  bool any = false;
  auto [first, last] = req.equal_range(bhttp::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    any = true;
    std::string_view v(field->value().data(), field->value().size());
    size_t pos = 0;
    while (pos <= v.size()) {
      size_t end = v.find(',', pos);
      if (end == std::string_view::npos) end = v.size();
      std::string_view item = v.substr(pos, end - pos);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      std::string lower;
      for (char c : item) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      codings.push_back(std::move(lower));
      pos = end + 1;
    }
  }
  if (!any) return {0, {}};
  if (req.version() < 11) return {400, "Transfer-Encoding is not allowed in an HTTP/1.0 request"};
  if (req.find(bhttp::field::content_length) != req.end())
    return {400, "a request must not carry both Transfer-Encoding and Content-Length"};
  for (const auto& coding : codings) {
    if (coding.empty()) return {400, "Transfer-Encoding has an empty coding"};
    if (coding != "chunked") return {501, "unsupported transfer coding '" + coding + "' (only chunked is accepted)"};
  }
  if (codings.size() != 1) return {400, "chunked must be the last transfer coding, applied once"};
  return {0, {}};
}

// The path of the request being refused, for its error shape: the parser's target once the
// request line is parsed (also when a later check failed), else the request line still in the
// read buffer (a 431 is refused before any of the header is parsed).
std::string refused_path(const bhttp::request_parser<bhttp::string_body>& parser, const beast::flat_buffer& buffer) {
  std::string_view target(parser.get().target().data(), parser.get().target().size());
  if (target.empty()) {
    std::string_view raw(static_cast<const char*>(buffer.data().data()), buffer.data().size());
    raw = raw.substr(0, raw.find("\r\n"));
    size_t start = raw.find(' ');
    if (start == std::string_view::npos) return {};
    raw.remove_prefix(start + 1);
    target = raw.substr(0, raw.find(' '));
  }
  return std::string(Router::path_of(target));
}

bool is_quiet_close(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
         ec == beast::error::timeout || ec == net::error::connection_reset || ec == net::error::bad_descriptor ||
         ec == bhttp::error::partial_message;
}

// A request's share of ConnectionHost's body budget, given back when it goes out of scope.
class BodyReservation {
 public:
  explicit BodyReservation(ConnectionHost& host) : host_(host) {}
  ~BodyReservation() { release(); }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  // Holds at least `total` bytes; false (holding what it held) when the budget has no room.
  bool grow(size_t total) {
    if (total <= held_) return true;
    if (!host_.reserve_body(total - held_)) return false;
    held_ = total;
    return true;
  }
  void release() {
    if (held_) host_.release_body(held_);
    held_ = 0;
  }

 private:
  ConnectionHost& host_;
  size_t held_ = 0;
};

}  // namespace

Connection::Connection(tcp::socket socket, ConnectionHost& host) : stream_(std::move(socket)), host_(host) {}

void Connection::start() {
  net::co_spawn(
      stream_.get_executor(), [self = shared_from_this()] { return self->serve(); }, net::detached);
}

void Connection::on_server_stop() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) self->close();
  });
}

void Connection::abort() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->channel_ && !self->stop_requested_) {
      // A deferred reply: write_deferred answers 503 if nothing was sent yet, else writes the
      // stream's final event, then the connection closes.
      self->stop_requested_ = true;
      self->channel_->cancel_for_shutdown();
      return;
    }
    if (self->channel_) self->channel_->consumer_closed();
    self->close();
  });
}

void Connection::count_request(unsigned status) {
  if (!uncounted_) return;
  host_.metrics.count_request(uncounted_->endpoint, static_cast<int>(status));
  host_.metrics.observe_request_duration(
      uncounted_->endpoint,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - uncounted_->received).count());
  uncounted_.reset();
}

void Connection::close_if_idle() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) self->close();
  });
}

void Connection::close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

net::awaitable<void> Connection::serve() {
  const ServerConfig& cfg = host_.config;
  bool first = true;
  bool busy = false;  // between request read and response end: counted for the drain
  try {
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.header_limit(static_cast<uint32_t>(std::min<size_t>(cfg.max_header_bytes, UINT32_MAX)));
      parser.body_limit(cfg.max_body_bytes);
      idle_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
      idle_ = true;
      if (host_.stopping) break;
      stream_.expires_after(first ? cfg.read_timeout : cfg.idle_timeout);
      first = false;
      auto [hec, hn] = co_await bhttp::async_read_header(stream_, buffer_, parser, kNoThrow);
      idle_ = false;
      if (!hec) {
        auto [te_status, te_problem] = transfer_encoding_problem(parser.get());
        if (te_status) {
          host_.metrics.count_request("other", static_cast<int>(te_status));
          co_await reject_and_close(parser.get().version(), refused_path(parser, buffer_), te_status, te_problem);
          break;
        }
      }
      if (!hec && parser.get()[bhttp::field::expect] == "100-continue") {
        bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, parser.get().version()};
        stream_.expires_after(cfg.write_timeout);
        co_await bhttp::async_write(stream_, cont, net::use_awaitable);
      }
      // The body counts against the server-wide budget while it is read and handled: all of a
      // declared Content-Length up front, a chunked body as it grows.
      BodyReservation body_budget{host_};
      bool over_budget = false;
      if (!hec) {
        if (auto declared = parser.content_length(); declared && *declared > 0)
          over_budget = !body_budget.grow(std::min<uint64_t>(*declared, cfg.max_body_bytes));
        stream_.expires_after(cfg.read_timeout);
        while (!over_budget && !parser.is_done()) {
          auto [bec, bn] = co_await bhttp::async_read_some(stream_, buffer_, parser, kNoThrow);
          if (bec) {
            hec = bec;
            break;
          }
          over_budget = !body_budget.grow(parser.get().body().size());
        }
      }
      stream_.expires_never();
      unsigned version = parser.is_header_done() ? parser.get().version() : 11;
      const std::string path = hec || over_budget ? refused_path(parser, buffer_) : std::string();
      if (over_budget) {
        host_.metrics.count_request("other", 503);
        co_await reject_and_close(version, path, 503,
                                  "the server is holding " + std::to_string(cfg.max_inflight_body_bytes) +
                                      " bytes of request bodies; retry shortly",
                                  true);
        break;
      }
      if (hec == bhttp::error::header_limit) {
        host_.metrics.count_request("other", 431);
        co_await reject_and_close(version, path, 431,
                                  "request headers exceed " + std::to_string(cfg.max_header_bytes) + " bytes");
        break;
      }
      if (hec == bhttp::error::body_limit) {
        host_.metrics.count_request("other", 413);
        co_await reject_and_close(version, path, 413,
                                  "request body exceeds " + std::to_string(cfg.max_body_bytes) + " bytes");
        break;
      }
      if (hec) {
        // Timeouts, hang-ups and a stopping server end the connection without an answer.
        if (!is_quiet_close(hec)) {
          host_.metrics.count_request("other", 400);
          co_await reject_and_close(version, path, 400, "malformed HTTP request: " + hec.message());
        }
        break;
      }

      HttpRequest req = parser.release();
      const bool keep_alive = req.keep_alive() && !host_.stopping;
      host_.busy_changed(+1);
      busy = true;
      auto received = std::chrono::steady_clock::now();
      std::string_view target(req.target().data(), req.target().size());
      RequestContext ctx{req, Router::path_of(target), stream_.get_executor(), received};
      Router::Dispatched d;
      if (req.method() == bhttp::verb::post) {
        // Parsing, rendering and tokenizing a large body take long: not on an io thread, where
        // they would hold up /health and every stream served by that thread.
        d = co_await net::co_spawn(
            host_.handler_executor(),
            [&]() -> net::awaitable<Router::Dispatched> { co_return host_.router.dispatch(ctx); }, net::use_awaitable);
      } else {
        d = host_.router.dispatch(ctx);
      }
      // The handler has what it needs from the body: free it and its share of the budget.
      std::string().swap(req.body());
      body_budget.release();
      unsigned status = 0;
      bool ok;
      uncounted_ = Uncounted{d.endpoint, received};
      if (d.reply.channel) {
        channel_ = d.reply.channel;
        ok = co_await write_deferred(req, *channel_, keep_alive, status);
        channel_.reset();
      } else {
        status = d.reply.head.status;
        host_.router.decorate(d.reply.head, Router::origin_of(req));
        count_request(status);
        ok = co_await write_head(req, std::move(d.reply.head), keep_alive);
      }
      count_request(status ? status : 499);  // no answer was started: the client went away
      host_.busy_changed(-1);
      busy = false;
      if (!ok || !keep_alive || host_.stopping || peer_half_closed_) break;
    }
  } catch (const std::exception& e) {
    spdlog::debug("http: connection ended: {}", e.what());
    if (channel_) {
      channel_->consumer_closed();
      channel_.reset();
    }
    if (busy) host_.busy_changed(-1);
  }
  close();
  host_.connection_closed(this);
}

net::awaitable<bool> Connection::write_head(const HttpRequest& req, ResponseHead head, bool keep_alive) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(head.status), req.version()};
  apply_head(res, head, keep_alive);
  res.body() = std::move(head.body);
  res.prepare_payload();
  if (req.method() == bhttp::verb::head) res.body().clear();  // Content-Length stays the GET's
  co_return co_await timed_write([&] { return bhttp::async_write(stream_, res, kNoThrow); });
}

template <class Write>
net::awaitable<bool> Connection::timed_write(Write write) {
  stream_.expires_after(host_.config.write_timeout);
  auto [ec, n] = co_await write();
  stream_.expires_never();
  co_return !ec;
}

net::awaitable<bool> Connection::watch_half_closed_peer(const HttpRequest& req, ResponseChannel& channel,
                                                        bool streaming, bool& probed) {
  if (!probed && !streaming && req.version() >= 11) {
    // A half-closed client and one that closed entirely look the same until we send bytes:
    // a closed one answers them with a reset. An interim 100 is the one thing an HTTP/1.1
    // client must accept before the final response (RFC 9110 15.2).
    probed = true;
    static constexpr std::string_view kProbe = "HTTP/1.1 100 Continue\r\n\r\n";
    if (!co_await timed_write(
            [&] { return net::async_write(stream_, net::buffer(kProbe.data(), kProbe.size()), kNoThrow); }))
      co_return false;
  }
  net::steady_timer tick(stream_.get_executor(), std::chrono::milliseconds(50));
  auto which = co_await (channel.signal().async_wait(kNoThrow) || tick.async_wait(kNoThrow));
  if (which.index() == 0) co_return true;
  co_return peer_state(stream_.socket()) != PeerState::Gone;
}

net::awaitable<bool> Connection::write_deferred(const HttpRequest& req, ResponseChannel& channel, bool keep_alive,
                                                unsigned& status) {
  const ServerConfig& cfg = host_.config;
  bool streaming = false;
  bool watch_socket = true;
  bool probed = false;  // sent the interim 100 to a half-closed client
  for (;;) {
    channel.arm();
    ResponseChannel::Batch b = channel.take();
    if (stop_requested_ && !streaming && !b.head) {
      // Stopping, and this client (queued, or its reply not begun) has had nothing yet.
      channel.consumer_closed();
      status = 503;
      Reply r =
          error_reply(api_style_of_path(Router::path_of(std::string_view(req.target().data(), req.target().size()))),
                      503, "the server is shutting down; retry against the restarted service", {}, "shutting_down");
      r.head.headers.emplace_back("Retry-After", "5");
      host_.router.decorate(r.head, Router::origin_of(req));
      count_request(status);
      co_await write_head(req, std::move(r.head), false);
      co_return false;
    }
    if (b.head && !streaming) {
      status = b.head->status;
      host_.router.decorate(*b.head, Router::origin_of(req));
      if (!b.head->streaming) {
        count_request(status);
        bool ok = co_await write_head(req, std::move(*b.head), keep_alive && !peer_half_closed_);
        if (!ok) channel.consumer_closed();
        co_return ok;
      }
      bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), req.version()};
      apply_head(res, *b.head, keep_alive && !peer_half_closed_);
      res.chunked(true);
      bhttp::response_serializer<bhttp::empty_body> sr{res};
      if (!co_await timed_write([&] { return bhttp::async_write_header(stream_, sr, kNoThrow); })) {
        channel.consumer_closed();
        co_return false;
      }
      streaming = true;
    }
    if (streaming && !b.data.empty() && !co_await timed_write([&] {
          return net::async_write(stream_, bhttp::make_chunk(net::buffer(b.data)), kNoThrow);
        })) {
      channel.consumer_closed();
      co_return false;
    }
    if (b.finished) {
      if (!streaming) {
        // The producer ended without a response head: a bug upstream, not the client's fault.
        status = 500;
        Reply r =
            error_reply(api_style_of_path(Router::path_of(std::string_view(req.target().data(), req.target().size()))),
                        500, "the request ended without a response");
        host_.router.decorate(r.head, Router::origin_of(req));
        count_request(status);
        co_return co_await write_head(req, std::move(r.head), keep_alive && !peer_half_closed_);
      }
      count_request(status);
      const bool ok =
          co_await timed_write([&] { return net::async_write(stream_, bhttp::make_chunk_last(), kNoThrow); });
      co_return ok && !stop_requested_;
    }
    if (stop_requested_) {
      // The stream's final event is on its way (the generation was cancelled); do not wait long.
      if (!stop_deadline_) stop_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      if (std::chrono::steady_clock::now() >= *stop_deadline_) {
        channel.consumer_closed();
        co_return false;
      }
      net::steady_timer limit(stream_.get_executor(), *stop_deadline_);
      co_await (channel.signal().async_wait(kNoThrow) || limit.async_wait(kNoThrow));
      continue;
    }
    if (!watch_socket) {
      co_await channel.signal().async_wait(kNoThrow);
      continue;
    }
    if (peer_half_closed_) {
      // Nothing more can arrive; look at the socket now and then to notice a reset.
      if (!co_await watch_half_closed_peer(req, channel, streaming, probed)) {
        channel.consumer_closed();
        co_return false;
      }
      continue;
    }
    // Wait for more output, or for the client to send something or hang up.
    auto which = co_await (channel.signal().async_wait(kNoThrow) ||
                           stream_.socket().async_wait(tcp::socket::wait_read, kNoThrow));
    if (which.index() == 0) continue;
    auto [wec] = std::get<1>(which);
    // A wake-up is only a hint: the reactor can report readiness for bytes an earlier read
    // already took (the body of a request sent in two parts, say). Ask the socket itself.
    PeerState peer = wec ? PeerState::Gone : peer_state(stream_.socket());
    if (peer == PeerState::Quiet) continue;
    if (peer == PeerState::Gone) {
      channel.consumer_closed();
      co_return false;
    }
    if (peer == PeerState::HalfClosed) {
      // The client sent its request and shut down its sending side: it still reads the answer.
      peer_half_closed_ = true;
      continue;
    }
    // The client pipelined its next request: keep the bytes for the next read.
    beast::error_code ec;
    size_t available = stream_.socket().available(ec);
    if (ec || buffer_.size() + available > cfg.max_header_bytes + cfg.max_body_bytes) {
      watch_socket = false;
      continue;
    }
    size_t n = stream_.socket().read_some(buffer_.prepare(available), ec);
    if (ec) {
      channel.consumer_closed();
      co_return false;
    }
    buffer_.commit(n);
  }
}

net::awaitable<void> Connection::reject_and_close(unsigned version, std::string_view path, unsigned status,
                                                  std::string message, bool retry_later) {
  Reply r = error_reply(api_style_of_path(path), status, message);
  if (retry_later) r.head.headers.emplace_back("Retry-After", "1");
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), version};
  apply_head(res, r.head, false);
  res.body() = std::move(r.head.body);
  res.prepare_payload();
  stream_.expires_after(host_.config.write_timeout);
  auto [ec, n] = co_await bhttp::async_write(stream_, res, kNoThrow);
  if (ec) co_return;
  // Half-close and discard what the client is still sending for a moment, so that closing with
  // unread data does not reset the connection before the client has read the answer.
  beast::error_code sec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, sec);
  stream_.expires_after(std::chrono::seconds(1));
  size_t discarded = 0;
  char sink[16384];
  while (discarded < (4u << 20)) {
    auto [rec, got] = co_await stream_.async_read_some(net::buffer(sink), kNoThrow);
    if (rec) break;
    discarded += got;
  }
  stream_.expires_never();
}

}  // namespace ds4::http
