#pragma once
// A Server + Service on the scripted backend, on an ephemeral loopback port, for the HTTP tests.
#include <chrono>
#include <memory>
#include <string>

#include "gateway/http/server.hpp"
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
    server = std::make_unique<http::Server>(cfg, service, metrics);
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

}  // namespace ds4::test
