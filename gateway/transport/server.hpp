#pragma once
// ds4d's HTTP server: HTTP/1.1 over Boost.Beast, serving the routes it is given.
//
//   ServerConfig cfg;                       // 127.0.0.1:8080 by default; port 0 = ephemeral
//   ds4::http::Server server(cfg, metrics, [&](Router& r, const ServerConfig& c) { ... });
//   server.start();                         // binds, starts the io threads; throws on bind errors
//   ...
//   server.stop(std::chrono::seconds(30));  // stop accepting, drain in-flight, then close
//
// The transport (connections, limits, timeouts, routing, auth, CORS, reply framing) lives in
// gateway/transport; the endpoints are the API layer's (gateway/api, api_server.hpp), which
// registers them on the Router through `add_routes`.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ds4::serving {
class Metrics;
}  // namespace ds4::serving

namespace ds4::http {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  unsigned io_threads = 2;
  // Bearer token for every endpoint except /health and /health/live; empty: no auth.
  std::string api_key;
  // Browser origins ("http://localhost:3000", or "*") allowed to call the API: they get
  // Access-Control-Allow-* headers and preflights; requests from any other Origin are 403.
  std::vector<std::string> cors_origins;
  // Host names besides the loopback ones and the bind address ("*": any). See router.hpp.
  std::vector<std::string> allowed_hosts;
  // start() refuses a non-loopback address without an api_key unless this is set.
  bool allow_unauthenticated_remote = false;
  size_t max_header_bytes = 64 * 1024;                    // larger: 431
  size_t max_body_bytes = 64 * 1024 * 1024;               // larger: 413
  size_t max_tokenize_response_bytes = 16 * 1024 * 1024;  // a longer /tokenize answer: 413
  // Open connections at most. At the cap an idle keep-alive connection is closed to make room;
  // when none is idle the newcomer gets 503 and is closed. Also bounded by RLIMIT_NOFILE.
  size_t max_connections = 512;
  // Request body bytes held by all connections together (being read or being handled); a
  // request that would exceed it gets 503 with Retry-After.
  size_t max_inflight_body_bytes = 128 * 1024 * 1024;
  // Threads that run POST handlers (JSON parsing, rendering, tokenization) off the io threads,
  // so /health and streams stay responsive under heavy requests.
  unsigned handler_threads = 2;
  std::chrono::milliseconds read_timeout{30'000};          // reading one request once it started
  std::chrono::milliseconds idle_timeout{60'000};          // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30'000};         // one write to a client that does not drain
  std::chrono::milliseconds request_timeout{30 * 60'000};  // one generation, queue included
  // The model name clients see in /v1/models and in responses ("" : the backend's id).
  std::string model_name;
  // Other names a request's `model` may give: exact names or prefixes ending in '*'; "*" accepts
  // any name. Others are 404 model_not_found (model_names.hpp). Exact ones are listed in /v1/models.
  std::vector<std::string> model_aliases = {"*"};
  // Where /v1/responses stores what previous_response_id needs, so that it survives a restart
  // (response_history.hpp); empty: in memory only. The daemon uses <cache.dir>/responses.
  std::string response_dir;
  // How echo contracts are enforced (protocol::ContractMode): "off", "warn" (check, repair what
  // can be repaired, report in the ds4d object and metrics) or "strict" (422 on a violation).
  std::string contract_mode = "warn";
};

// A ServerConfig that cannot be served as given (a bad address, an open port without a key):
// the operator's mistake, reported before anything listens.
struct ServerConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class Router;

class Server {
 public:
  // Registers the routes on the server's Router; called once, in the constructor, with the
  // server's own copy of the configuration (which lives as long as the server).
  using AddRoutes = std::function<void(Router& router, const ServerConfig& config)>;

  Server(ServerConfig config, serving::Metrics& metrics, const AddRoutes& add_routes);
  ~Server();  // stop(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts the io threads. Throws ServerConfigError for a configuration it refuses
  // (unparsable address, non-loopback address without api_key and without
  // allow_unauthenticated_remote), std::runtime_error naming the address when binding fails.
  void start();
  // The bound port (the actual one when the configured port was 0).
  uint16_t port() const;
  // Stops accepting, lets in-flight requests finish for up to `drain`, then cancels their
  // generations, closes every connection and joins the io threads. Idempotent.
  void stop(std::chrono::milliseconds drain);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4::http
