#pragma once
// Connection: one client socket, served by one coroutine on its own strand.
//
// Loop: read a request (header limit -> 431, body limit -> 413, both answered before the body
// is read, then the connection closes), dispatch it, write the reply, and keep the connection
// open while the client asks for keep-alive and the server is not stopping. Time limits: the
// idle timeout between requests, the read timeout while a request arrives, the write timeout
// for each write. A deferred reply is written as it arrives from the ResponseChannel; meanwhile
// the socket is watched so that a client that hangs up cancels its generation at once (the
// cancel flag is checked before every token).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <atomic>
#include <memory>

#include "gateway/http/reply.hpp"
#include "gateway/http/router.hpp"
#include "gateway/http/server.hpp"

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

  ConnectionHost(const ServerConfig& c, const Router& r, serving::Metrics& m) : config(c), router(r), metrics(m) {}
  virtual ~ConnectionHost() = default;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, ConnectionHost& host);

  // Spawns the serving coroutine on the connection's strand.
  void start();
  // Thread-safe: post to the strand. on_server_stop closes an idle connection and lets a busy one
  // finish its current response; abort cancels the generation and closes the socket now.
  void on_server_stop();
  void abort();

 private:
  boost::asio::awaitable<void> serve();
  boost::asio::awaitable<bool> write_head(const HttpRequest& req, ResponseHead head, bool keep_alive);
  boost::asio::awaitable<bool> write_deferred(const HttpRequest& req, ResponseChannel& channel, bool keep_alive,
                                              unsigned& status);
  boost::asio::awaitable<void> reject_and_close(unsigned version, unsigned status, std::string message);
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  ConnectionHost& host_;
  bool idle_ = true;                          // waiting for a request's first bytes
  std::shared_ptr<ResponseChannel> channel_;  // the deferred reply being written
};

}  // namespace ds4::http
