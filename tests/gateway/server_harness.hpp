#pragma once
// A Server + Service on the scripted backend on an ephemeral loopback port, and small helpers
// the HTTP-level gateway tests share.
#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "gateway/api/api_server.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/http_test_client.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::test {

struct Harness {
  explicit Harness(http::ServerConfig cfg = {}, serving::ServiceConfig scfg = {}, bool load = true,
                   std::string reply = "Hello there")
      : service(scfg, metrics), backend(std::make_shared<ScriptedBackend>(std::move(reply))) {
    cfg.port = 0;
    server = http::make_api_server(cfg, service, metrics);
    server->start();
    if (load) service.set_backend(backend);
  }
  ~Harness() {
    backend->open_gate();
    server->stop(std::chrono::milliseconds(0));
    service.stop(std::chrono::milliseconds(0));
  }
  HttpTestClient client() { return HttpTestClient(server->port()); }

  serving::Metrics metrics;
  serving::Service service;
  std::shared_ptr<ScriptedBackend> backend;
  std::unique_ptr<http::Server> server;
};

inline boost::json::value body_json(const HttpTestClient::Response& r) { return boost::json::parse(r.body()); }

// Polls `pred` until it holds. The default bound only keeps a broken server from hanging the
// suite; it is far above what any condition needs, even on a machine at load 20.
template <class Pred>
inline bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace ds4::test
