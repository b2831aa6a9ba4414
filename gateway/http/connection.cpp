// One client connection: read, dispatch, write, keep-alive, limits, timeouts, disconnect watch.
// See connection.hpp.
#include "gateway/http/connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <spdlog/spdlog.h>

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

bool is_quiet_close(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::operation_aborted ||
         ec == beast::error::timeout || ec == net::error::connection_reset || ec == net::error::bad_descriptor ||
         ec == bhttp::error::partial_message;
}

}  // namespace

Connection::Connection(tcp::socket socket, ConnectionHost& host) : stream_(std::move(socket)), host_(host) {}

void Connection::start() {
  net::co_spawn(stream_.get_executor(), [self = shared_from_this()] { return self->serve(); }, net::detached);
}

void Connection::on_server_stop() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->idle_) self->close();
  });
}

void Connection::abort() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->channel_) self->channel_->consumer_closed();
    self->close();
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
      idle_ = true;
      if (host_.stopping) break;
      stream_.expires_after(first ? cfg.read_timeout : cfg.idle_timeout);
      first = false;
      auto [hec, hn] = co_await bhttp::async_read_header(stream_, buffer_, parser, kNoThrow);
      idle_ = false;
      if (!hec && parser.get()[bhttp::field::expect] == "100-continue") {
        bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, parser.get().version()};
        stream_.expires_after(cfg.write_timeout);
        co_await bhttp::async_write(stream_, cont, net::use_awaitable);
      }
      if (!hec) {
        stream_.expires_after(cfg.read_timeout);
        auto [bec, bn] = co_await bhttp::async_read(stream_, buffer_, parser, kNoThrow);
        hec = bec;
      }
      stream_.expires_never();
      unsigned version = parser.is_header_done() ? parser.get().version() : 11;
      if (hec == bhttp::error::header_limit) {
        host_.metrics.count_request("other", 431);
        co_await reject_and_close(version, 431,
                                  "request headers exceed " + std::to_string(cfg.max_header_bytes) + " bytes");
        break;
      }
      if (hec == bhttp::error::body_limit) {
        host_.metrics.count_request("other", 413);
        co_await reject_and_close(version, 413, "request body exceeds " + std::to_string(cfg.max_body_bytes) + " bytes");
        break;
      }
      if (hec) {
        // Timeouts, hang-ups and a stopping server end the connection without an answer.
        if (!is_quiet_close(hec)) {
          host_.metrics.count_request("other", 400);
          co_await reject_and_close(version, 400, "malformed HTTP request: " + hec.message());
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
      Router::Dispatched d = host_.router.dispatch(ctx);
      unsigned status = 0;
      bool ok;
      if (d.reply.channel) {
        channel_ = d.reply.channel;
        ok = co_await write_deferred(req, *channel_, keep_alive, status);
        channel_.reset();
      } else {
        status = d.reply.head.status;
        host_.router.decorate(d.reply.head);
        ok = co_await write_head(req, std::move(d.reply.head), keep_alive);
      }
      host_.metrics.count_request(d.endpoint, static_cast<int>(status ? status : 499));
      host_.metrics.observe_request_duration(
          d.endpoint, std::chrono::duration<double>(std::chrono::steady_clock::now() - received).count());
      host_.busy_changed(-1);
      busy = false;
      if (!ok || !keep_alive || host_.stopping) break;
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
  stream_.expires_after(host_.config.write_timeout);
  auto [ec, n] = co_await bhttp::async_write(stream_, res, kNoThrow);
  stream_.expires_never();
  co_return !ec;
}

net::awaitable<bool> Connection::write_deferred(const HttpRequest& req, ResponseChannel& channel, bool keep_alive,
                                                unsigned& status) {
  const ServerConfig& cfg = host_.config;
  bool streaming = false;
  bool watch_socket = true;
  for (;;) {
    channel.arm();
    ResponseChannel::Batch b = channel.take();
    if (b.head && !streaming) {
      status = b.head->status;
      host_.router.decorate(*b.head);
      if (!b.head->streaming) {
        bool ok = co_await write_head(req, std::move(*b.head), keep_alive);
        if (!ok) channel.consumer_closed();
        co_return ok;
      }
      bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), req.version()};
      apply_head(res, *b.head, keep_alive);
      res.chunked(true);
      bhttp::response_serializer<bhttp::empty_body> sr{res};
      stream_.expires_after(cfg.write_timeout);
      auto [ec, n] = co_await bhttp::async_write_header(stream_, sr, kNoThrow);
      stream_.expires_never();
      if (ec) {
        channel.consumer_closed();
        co_return false;
      }
      streaming = true;
    }
    if (streaming && !b.data.empty()) {
      stream_.expires_after(cfg.write_timeout);
      auto [ec, n] = co_await net::async_write(stream_, bhttp::make_chunk(net::buffer(b.data)), kNoThrow);
      stream_.expires_never();
      if (ec) {
        channel.consumer_closed();
        co_return false;
      }
    }
    if (b.finished) {
      if (!streaming) {
        // The producer ended without a response head: a bug upstream, not the client's fault.
        status = 500;
        Reply r = api_error(500, "the request ended without a response");
        host_.router.decorate(r.head);
        co_return co_await write_head(req, std::move(r.head), keep_alive);
      }
      stream_.expires_after(cfg.write_timeout);
      auto [ec, n] = co_await net::async_write(stream_, bhttp::make_chunk_last(), kNoThrow);
      stream_.expires_never();
      co_return !ec;
    }
    if (!watch_socket) {
      co_await channel.signal().async_wait(kNoThrow);
      continue;
    }
    // Wait for more output, or for the client to hang up.
    auto which = co_await (channel.signal().async_wait(kNoThrow) ||
                           stream_.socket().async_wait(tcp::socket::wait_read, kNoThrow));
    if (which.index() == 0) continue;
    auto [wec] = std::get<1>(which);
    beast::error_code ec;
    size_t available = wec ? 0 : stream_.socket().available(ec);
    if (wec || ec || available == 0) {
      // Readable with nothing to read: the peer closed (or reset) the connection.
      channel.consumer_closed();
      co_return false;
    }
    // The client pipelined its next request: keep the bytes for the next read.
    if (buffer_.size() + available > cfg.max_header_bytes + cfg.max_body_bytes) {
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

net::awaitable<void> Connection::reject_and_close(unsigned version, unsigned status, std::string message) {
  Reply r = api_error(status, message);
  host_.router.decorate(r.head);
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
