#pragma once
// Connection: one client socket, served by one coroutine on its own strand.
//
// It reads a request, dispatches it, writes the reply and keeps the connection open while the
// client asks for keep-alive; a deferred reply is written as it arrives from the ResponseChannel
// while the socket is watched, so a client that hangs up cancels its generation at once. Limits,
// timeouts and how a half-close is told from a hang-up: docs/api.md §connections.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gateway/transport/reply.hpp"
#include "gateway/transport/router.hpp"
#include "gateway/transport/server.hpp"

namespace ds4::serving {
class Metrics;
}

namespace ds4::http {

// What connections share with the server that owns them.
struct ConnectionHost {
  const ServerConfig& config;
  const Router& router;
  serving::Metrics& metrics;
  std::atomic<bool> stopping{false};
  virtual void connection_closed(const void* connection) = 0;
  virtual void busy_changed(int delta) = 0;
  // The global body budget: take `bytes` (false: over budget, nothing taken) / give them back.
  virtual bool reserve_body(size_t bytes) = 0;
  virtual void release_body(size_t bytes) = 0;
  // Where heavy handlers run (see ServerConfig::handler_threads).
  virtual boost::asio::any_io_executor handler_executor() = 0;

  ConnectionHost(const ServerConfig& c, const Router& r, serving::Metrics& m) : config(c), router(r), metrics(m) {}
  virtual ~ConnectionHost() = default;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, ConnectionHost& host);

  // Spawns the serving coroutine on the connection's strand.
  void start();
  // Thread-safe: post to the strand. on_server_stop closes an idle connection and lets a busy one
  // finish its current response; abort cancels the generation: a client that has received
  // nothing yet gets 503, a stream gets its final event (finish_reason "error"), then the
  // connection closes.
  void on_server_stop();
  void abort();
  // Thread-safe: whether the connection waits for a request, and a request to close it if so.
  bool idle() const { return idle_.load(); }
  // Since when it has been idle (steady clock); meaningful while idle().
  std::chrono::steady_clock::time_point idle_since() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(idle_since_.load()));
  }
  void close_if_idle();

 private:
  boost::asio::awaitable<void> serve();
  boost::asio::awaitable<bool> write_head(const HttpRequest& req, ResponseHead head, bool keep_alive);
  boost::asio::awaitable<bool> write_deferred(const HttpRequest& req, ResponseChannel& channel, bool keep_alive,
                                              unsigned& status);
  // Runs one write (`write()` starts it and returns its awaitable) under the write timeout; false
  // when it failed or timed out.
  template <class Write>
  boost::asio::awaitable<bool> timed_write(Write write);
  // While a deferred reply waits on a client that shut down its sending side: probes it once
  // (an interim 100), then waits for output or 50 ms and looks at the socket. False: it is gone.
  boost::asio::awaitable<bool> watch_half_closed_peer(const HttpRequest& req, ResponseChannel& channel, bool streaming,
                                                      bool& probed);
  // Answers `status` in the error shape of `path`'s API, then closes.
  boost::asio::awaitable<void> reject_and_close(unsigned version, std::string_view path, unsigned status,
                                                std::string message, bool retry_later = false);
  void close();
  // Counts the request being answered in the metrics, once. Called before the answer's last
  // bytes are written, so a client that reads /metrics right after its answer sees it counted.
  void count_request(unsigned status);

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  ConnectionHost& host_;
  std::atomic<bool> idle_{true};  // waiting for a request's first bytes
  std::atomic<std::chrono::steady_clock::rep> idle_since_{std::chrono::steady_clock::now().time_since_epoch().count()};
  std::shared_ptr<ResponseChannel> channel_;  // the deferred reply being written
  struct Uncounted {
    std::string endpoint;
    std::chrono::steady_clock::time_point received;
  };
  std::optional<Uncounted> uncounted_;  // the request being answered, not yet counted
  bool peer_half_closed_ = false;       // the client shut down its sending side (FIN seen)
  bool stop_requested_ = false;         // the server stops past its drain: finish the reply, then close
  std::optional<std::chrono::steady_clock::time_point> stop_deadline_;  // for the final event once stopping
};

}  // namespace ds4::http
