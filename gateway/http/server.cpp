// The listener, the io threads and graceful shutdown. See server.hpp.
//
// start() binds (SO_REUSEADDR), spawns the accept loop and `io_threads` threads running the
// io_context. Every accepted socket gets its own strand and Connection. stop(drain) closes the
// listener, tells idle connections to close and busy ones to close after their response, waits
// up to `drain` for the busy ones, then aborts the rest (which cancels their generations), waits
// for every connection to end and joins the threads.
#include "gateway/http/server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <condition_variable>
#include <fmt/format.h>
#include <mutex>
#include <spdlog/spdlog.h>
#include <thread>
#include <unordered_map>

#include "gateway/http/connection.hpp"
#include "gateway/http/endpoints.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {
namespace net = boost::asio;
using net::ip::tcp;

struct Server::Impl final : ConnectionHost {
  Impl(ServerConfig cfg, serving::Service& service, serving::Metrics& metrics)
      : ConnectionHost(config_storage, router_storage, metrics),
        config_storage(std::move(cfg)),
        router_storage(RouterOptions{config_storage.api_key, config_storage.cors}),
        service(service),
        acceptor(ioc) {
    add_endpoints(router_storage, EndpointEnv{config_storage, service, metrics});
  }

  void connection_closed(const void* connection) override {
    std::lock_guard lock(mu);
    connections.erase(connection);
    cv.notify_all();
  }
  void busy_changed(int delta) override {
    std::lock_guard lock(mu);
    busy += delta;
    cv.notify_all();
  }

  net::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, strand_socket] =
          co_await acceptor.async_accept(net::make_strand(ioc), net::as_tuple(net::use_awaitable));
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
        spdlog::warn("http: accept failed: {}", ec.message());
        continue;
      }
      tcp::socket socket(std::move(strand_socket));  // keeps the strand as its executor
      beast_no_delay(socket);
      auto conn = std::make_shared<Connection>(std::move(socket), *this);
      {
        std::lock_guard lock(mu);
        if (stopping) continue;  // socket closes as it goes out of scope
        connections.emplace(conn.get(), conn);
      }
      conn->start();
    }
  }

  static void beast_no_delay(tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(tcp::no_delay(true), ec);
  }

  ServerConfig config_storage;
  Router router_storage;
  serving::Service& service;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  uint16_t bound_port = 0;
  bool started = false;
  bool stopped = false;

  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<const void*, std::weak_ptr<Connection>> connections;
  int busy = 0;
};

Server::Server(ServerConfig config, serving::Service& service, serving::Metrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(config), service, metrics)) {}

Server::~Server() { stop(std::chrono::milliseconds(0)); }

void Server::start() {
  Impl& s = *impl_;
  if (s.started) throw std::logic_error("Server::start called twice");
  boost::system::error_code ec;
  auto address = net::ip::make_address(s.config.host == "localhost" ? "127.0.0.1" : s.config.host, ec);
  if (ec) throw std::runtime_error(fmt::format("http: bad listen address '{}': {}", s.config.host, ec.message()));
  tcp::endpoint endpoint(address, s.config.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error(fmt::format("http: cannot listen on {}:{}: {}", s.config.host, s.config.port, ec.message()));
  s.bound_port = s.acceptor.local_endpoint().port();
  s.started = true;
  net::co_spawn(s.ioc, s.accept_loop(), net::detached);
  unsigned n = std::max(1u, s.config.io_threads);
  for (unsigned i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  spdlog::info("http: listening on {}:{} ({} io threads, auth {}, cors {})", s.config.host, s.bound_port, n,
               s.config.api_key.empty() ? "off" : "on", s.config.cors ? "on" : "off");
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
  spdlog::info("http: stopped");
}

}  // namespace ds4::http
