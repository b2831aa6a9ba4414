// The listener, the io threads and graceful shutdown. See server.hpp. Descriptor limits, the
// connection cap and the order of a drain: docs/api.md §listener-and-shutdown.
#include "gateway/transport/server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "gateway/serving/metrics.hpp"
#include "gateway/transport/connection.hpp"

namespace ds4::http {
namespace net = boost::asio;
using net::ip::tcp;

namespace {

// At most one line per interval for a condition that can repeat thousands of times a second
// (accept failing while descriptors are exhausted); the lines in between are counted.
class RateLimitedWarning {
 public:
  explicit RateLimitedWarning(std::chrono::seconds interval) : interval_(interval) {}
  void warn(const std::string& what) {
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < interval_) {
      ++suppressed_;
      return;
    }
    if (suppressed_) spdlog::warn("{} (and {} more times in the last {} s)", what, suppressed_, interval_.count());
    else spdlog::warn("{}", what);
    last_ = now;
    suppressed_ = 0;
  }

 private:
  std::mutex mu_;
  std::chrono::seconds interval_;
  std::chrono::steady_clock::time_point last_{};
  uint64_t suppressed_ = 0;
};

bool is_loopback_address(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto a = net::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

// RLIMIT_NOFILE's soft limit, raised to the hard one (a service has no reason to run short).
size_t descriptor_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(rl.rlim_cur);
}

const std::string& too_many_connections_reply() {
  static const std::string reply = [] {
    std::string body = R"({"error":{"message":"too many open connections; retry shortly",)"
                       R"("type":"service_unavailable_error","param":null,"code":"too_many_connections"}})";
    return "HTTP/1.1 503 Service Unavailable\r\nServer: ds4d\r\nContent-Type: application/json\r\n"
           "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  return reply;
}

// Writes the 503 above to a socket just accepted (its send buffer is empty: one non-blocking
// send takes it all) and closes it.
void refuse_connection(int fd) {
  const std::string& reply = too_many_connections_reply();
  (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

}  // namespace

struct Server::Impl final : ConnectionHost {
  Impl(ServerConfig cfg, serving::Metrics& metrics, const AddRoutes& add_routes)
      : ConnectionHost(config_storage, router_storage, metrics),
        config_storage(std::move(cfg)),
        router_storage(RouterOptions{config_storage.api_key, config_storage.cors_origins, config_storage.allowed_hosts,
                                     config_storage.host}),
        acceptor(ioc),
        handlers(std::max(1u, config_storage.handler_threads)) {
    if (add_routes) add_routes(router_storage, config_storage);
  }

  bool reserve_body(size_t bytes) override {
    size_t held = body_bytes.load();
    do {
      if (held + bytes > config.max_inflight_body_bytes) return false;
    } while (!body_bytes.compare_exchange_weak(held, held + bytes));
    return true;
  }
  void release_body(size_t bytes) override { body_bytes.fetch_sub(bytes); }
  net::any_io_executor handler_executor() override { return handlers.get_executor(); }

  // At the connection cap: asks the connection idle longest to close (true), or finds none idle.
  bool shed_idle_connection() {
    std::shared_ptr<Connection> victim;
    {
      std::lock_guard lock(mu);
      for (auto& [key, weak] : connections) {
        auto c = weak.lock();
        if (c && c->idle() && !shedding.contains(key) && (!victim || c->idle_since() < victim->idle_since()))
          victim = std::move(c);
      }
      if (victim) shedding.insert(victim.get());
    }
    if (!victim) return false;
    victim->close_if_idle();
    return true;
  }

  // No descriptor left to accept with: free one, take the waiting connection off the backlog
  // (else the listener stays readable and the loop spins) and answer it 503.
  void refuse_with_reserve() {
    if (reserve_fd >= 0) {
      ::close(reserve_fd);
      reserve_fd = -1;
    }
    int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) refuse_connection(fd);
    reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }

  void connection_closed(const void* connection) override {
    std::lock_guard lock(mu);
    connections.erase(connection);
    shedding.erase(connection);
    cv.notify_all();
  }
  void busy_changed(int delta) override {
    std::lock_guard lock(mu);
    busy += delta;
    cv.notify_all();
  }

  net::awaitable<void> accept_loop() {
    net::steady_timer pause(ioc);
    for (;;) {
      auto [ec, strand_socket] =
          co_await acceptor.async_accept(net::make_strand(ioc), net::as_tuple(net::use_awaitable));
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space || ec == net::error::no_memory) {
          accept_warning.warn(fmt::format("http: cannot accept connections: {} ({} open); closing idle ones",
                                          ec.message(), open_connections()));
          if (!shed_idle_connection()) refuse_with_reserve();
          // Give the closes a moment instead of retrying at once (which spins a core).
          pause.expires_after(std::chrono::milliseconds(20));
          co_await pause.async_wait(net::as_tuple(net::use_awaitable));
        } else {
          accept_warning.warn("http: accept failed: " + ec.message());
        }
        continue;
      }
      tcp::socket socket(std::move(strand_socket));  // keeps the strand as its executor
      beast_no_delay(socket);
      if (open_connections() >= connection_cap && !shed_idle_connection()) {
        cap_warning.warn(
            fmt::format("http: {} connections open (the cap), none idle; refusing new ones with 503", connection_cap));
        refuse_connection(socket.release());
        continue;
      }
      auto conn = std::make_shared<Connection>(std::move(socket), *this);
      {
        std::lock_guard lock(mu);
        if (stopping) continue;  // socket closes as it goes out of scope
        connections.emplace(conn.get(), conn);
      }
      conn->start();
    }
  }

  size_t open_connections() {
    std::lock_guard lock(mu);
    return connections.size();
  }

  static void beast_no_delay(tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(tcp::no_delay(true), ec);
  }

  ServerConfig config_storage;
  Router router_storage;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  uint16_t bound_port = 0;
  bool started = false;
  bool stopped = false;

  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<const void*, std::weak_ptr<Connection>> connections;
  std::unordered_set<const void*> shedding;  // asked to close to make room
  int busy = 0;

  std::atomic<size_t> body_bytes{0};
  net::thread_pool handlers;
  size_t connection_cap = 0;
  int reserve_fd = -1;  // a spare descriptor, given up to shed a connection when none is left
  RateLimitedWarning accept_warning{std::chrono::seconds(10)};
  RateLimitedWarning cap_warning{std::chrono::seconds(10)};
};

Server::Server(ServerConfig config, serving::Metrics& metrics, const AddRoutes& add_routes)
    : impl_(std::make_unique<Impl>(std::move(config), metrics, add_routes)) {}

Server::~Server() { stop(std::chrono::milliseconds(0)); }

void Server::start() {
  Impl& s = *impl_;
  if (s.started) throw std::logic_error("Server::start called twice");
  boost::system::error_code ec;
  auto address = net::ip::make_address(s.config.host == "localhost" ? "127.0.0.1" : s.config.host, ec);
  if (ec) throw ServerConfigError(fmt::format("http: bad listen address '{}': {}", s.config.host, ec.message()));
  if (!is_loopback_address(s.config.host) && s.config.api_key.empty() && !s.config.allow_unauthenticated_remote)
    throw ServerConfigError(
        fmt::format("http: refusing to listen on {} without an API key: anyone who can reach it could use the model. "
                    "Set server.api_key_file, bind to 127.0.0.1, or set server.allow_unauthenticated_remote = true",
                    s.config.host));
  // Descriptors: leave room beyond the connections for the model files, logs and a spare.
  const size_t fds = descriptor_limit();
  s.connection_cap = std::min(s.config.max_connections, fds > 64 ? fds - 32 : fds / 2);
  if (s.connection_cap < s.config.max_connections)
    spdlog::warn("http: RLIMIT_NOFILE {} allows only {} of the {} configured connections", fds, s.connection_cap,
                 s.config.max_connections);
  s.reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  tcp::endpoint endpoint(address, s.config.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("http: cannot listen on {}:{}: {}", s.config.host, s.config.port, ec.message()));
  s.bound_port = s.acceptor.local_endpoint().port();
  s.started = true;
  net::co_spawn(s.ioc, s.accept_loop(), net::detached);
  unsigned n = std::max(1u, s.config.io_threads);
  for (unsigned i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  spdlog::info(
      "http: listening on {}:{} ({} io threads, {} handler threads, auth {}, {} CORS origins, up to {} "
      "connections)",
      s.config.host, s.bound_port, n, std::max(1u, s.config.handler_threads), s.config.api_key.empty() ? "off" : "on",
      s.config.cors_origins.size(), s.connection_cap);
}

uint16_t Server::port() const { return impl_->bound_port; }

void Server::stop(std::chrono::milliseconds drain) {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.stopping = true;
  net::post(s.ioc, [&s] {
    boost::system::error_code ec;
    s.acceptor.close(ec);
  });
  auto each_connection = [&s](auto&& fn) {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard lock(s.mu);
      for (auto& [key, weak] : s.connections)
        if (auto c = weak.lock()) live.push_back(std::move(c));
    }
    for (auto& c : live) fn(*c);
  };
  each_connection([](Connection& c) { c.on_server_stop(); });
  {
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_for(lock, drain, [&] { return s.busy == 0; }))
      spdlog::warn("http: {} requests still running after the {} ms drain; cancelling them", s.busy, drain.count());
  }
  each_connection([](Connection& c) { c.abort(); });
  {
    // Connections end promptly once aborted; the bound only guards against a bug hanging stop().
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_for(lock, std::chrono::seconds(10), [&] { return s.connections.empty(); }))
      spdlog::error("http: {} connections did not close", s.connections.size());
  }
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  s.handlers.join();
  if (s.reserve_fd >= 0) ::close(s.reserve_fd);
  s.reserve_fd = -1;
  spdlog::info("http: stopped");
}

}  // namespace ds4::http
