// The engine protocol's HTTP client. See upstream_client.hpp.
#include "gateway/upstream/upstream_client.hpp"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace ds4::upstream {
namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

const char* upstream_kind_name(UpstreamKind kind) {
  switch (kind) {
    case UpstreamKind::Vllm: return "vllm";
    case UpstreamKind::Sglang: return "sglang";
    case UpstreamKind::Ds4d: break;
  }
  return "ds4d";
}

UpstreamUrl parse_upstream_url(std::string_view url) {
  UpstreamKind kind = UpstreamKind::Ds4d;
  std::string_view scheme = "http://";
  if (url.starts_with("vllm+http://")) {
    kind = UpstreamKind::Vllm;
    scheme = "vllm+http://";
  } else if (url.starts_with("sglang+http://")) {
    kind = UpstreamKind::Sglang;
    scheme = "sglang+http://";
  } else if (!url.starts_with(scheme)) {
    throw std::invalid_argument("upstream '" + std::string(url) +
                                "': give http://HOST:PORT (a ds4d), vllm+http://HOST:PORT or sglang+http://HOST:PORT");
  }
  std::string_view rest = url.substr(scheme.size());
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos)
    throw std::invalid_argument("upstream '" + std::string(url) + "': give no path, only http://HOST:PORT");
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == rest.size() || colon == 0)
    throw std::invalid_argument("upstream '" + std::string(url) + "': the port is missing (http://HOST:PORT)");
  UpstreamUrl u;
  u.host = std::string(rest.substr(0, colon));
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
  u.port = std::string(rest.substr(colon + 1));
  for (char c : u.port)
    if (c < '0' || c > '9')
      throw std::invalid_argument("upstream '" + std::string(url) + "': the port is not a number");
  u.text = std::string(url.substr(0, scheme.size() + rest.size()));
  u.kind = kind;
  return u;
}

namespace {

// Resolves and connects within `timeout` (a blackholed address must not hold a request long).
void connect(net::io_context& ioc, tcp::socket& socket, const UpstreamUrl& url, std::chrono::milliseconds timeout) {
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec) throw std::runtime_error(url.text + ": cannot resolve: " + ec.message());
  bool done = false;
  net::async_connect(socket, endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  ioc.run_for(timeout);
  if (!done) {
    socket.close();
    ioc.restart();
    ioc.run();
    throw std::runtime_error(url.text + ": connect timed out after " + std::to_string(timeout.count()) + " ms");
  }
  ioc.restart();
  if (ec) throw std::runtime_error(url.text + ": cannot connect: " + ec.message());
  socket.set_option(tcp::no_delay(true));
}

void set_read_timeout(tcp::socket& socket, std::chrono::milliseconds timeout) {
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace

namespace {
HttpAnswer exchange(const UpstreamUrl& url, http::verb verb, std::string_view target, std::string body,
                    std::chrono::milliseconds timeout) {
  const std::string what = std::string(http::to_string(verb)) + " " + std::string(target);
  net::io_context ioc;
  tcp::socket socket(ioc);
  connect(ioc, socket, url, timeout);
  set_read_timeout(socket, timeout);
  http::request<http::string_body> req(verb, std::string(target), 11);
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::connection, "close");
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
  }
  boost::system::error_code ec;
  http::write(socket, req, ec);
  if (ec) throw std::runtime_error(url.text + ": " + what + ": " + ec.message());
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  http::read(socket, buffer, parser, ec);
  if (ec) throw std::runtime_error(url.text + ": " + what + ": " + ec.message());
  return HttpAnswer{parser.get().result_int(), parser.get().body()};
}
}  // namespace

HttpAnswer http_get(const UpstreamUrl& url, std::string_view target, std::chrono::milliseconds timeout) {
  return exchange(url, http::verb::get, target, {}, timeout);
}

HttpAnswer http_post_json(const UpstreamUrl& url, std::string_view target, std::string body,
                          std::chrono::milliseconds timeout) {
  return exchange(url, http::verb::post, target, std::move(body), timeout);
}

struct StreamCall::Impl {
  net::io_context ioc;
  tcp::socket socket{ioc};
  boost::beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  std::mutex mu;
  bool open = false, aborted = false;
  std::string where;
};

StreamCall::StreamCall() : impl_(std::make_unique<Impl>()) {}
StreamCall::~StreamCall() = default;

void StreamCall::shutdown() {
  std::lock_guard lock(impl_->mu);
  impl_->aborted = true;
  if (impl_->open) ::shutdown(impl_->socket.native_handle(), SHUT_RDWR);
}

unsigned StreamCall::open(const UpstreamUrl& url, std::string_view target, std::string body,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::chrono::milliseconds connect_timeout) {
  Impl& s = *impl_;
  s.where = url.text + std::string(target);
  connect(s.ioc, s.socket, url, connect_timeout);
  {
    std::lock_guard lock(s.mu);
    if (s.aborted) throw std::runtime_error(s.where + ": aborted");
    s.open = true;
  }
  http::request<http::string_body> req(http::verb::post, std::string(target), 11);
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::content_type, "application/json");
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  boost::system::error_code ec;
  http::write(s.socket, req, ec);
  if (ec) throw std::runtime_error(s.where + ": sending the job: " + ec.message());
  s.parser.body_limit(boost::none);
  http::read_header(s.socket, s.buffer, s.parser, ec);
  if (ec) throw std::runtime_error(s.where + ": no answer: " + ec.message());
  const unsigned status = s.parser.get().result_int();
  if (status != 200) {
    // The refusal or error body: short JSON.
    char chunk[4096];
    while (!s.parser.is_done() && error_body_.size() < (64u << 10)) {
      s.parser.get().body().data = chunk;
      s.parser.get().body().size = sizeof chunk;
      http::read(s.socket, s.buffer, s.parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      error_body_.append(chunk, sizeof chunk - s.parser.get().body().size);
    }
  }
  return status;
}

bool StreamCall::read_lines(const std::function<bool(std::string_view)>& line) {
  Impl& s = *impl_;
  std::string pending;
  char chunk[16384];
  while (!s.parser.is_done()) {
    s.parser.get().body().data = chunk;
    s.parser.get().body().size = sizeof chunk;
    boost::system::error_code ec;
    // read_some: each event as soon as it is in (read() would wait for a full buffer), and what
    // came before a break is still handed on before the break is reported.
    http::read_some(s.socket, s.buffer, s.parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    pending.append(chunk, sizeof chunk - s.parser.get().body().size);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
      if (!line(std::string_view(pending).substr(start, nl - start))) return false;
    pending.erase(0, start);
    if (ec) throw std::runtime_error(s.where + ": the stream broke: " + ec.message());
  }
  if (!pending.empty() && !line(pending)) return false;
  return true;
}

}  // namespace ds4::upstream
