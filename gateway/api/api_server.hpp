#pragma once
// The HTTP server with ds4d's API on it: the transport's Server (gateway/transport/server.hpp)
// with every endpoint (endpoints.hpp) registered on its router.
//
//   auto server = ds4::http::make_api_server(cfg, service, metrics);
//   server->start();
//   ...
//   server->stop(std::chrono::seconds(30));
#include <memory>

#include "gateway/transport/server.hpp"

namespace ds4::serving {
class Service;
class Metrics;
}  // namespace ds4::serving

namespace ds4::http {

// `service` and `metrics` must outlive the server.
std::unique_ptr<Server> make_api_server(ServerConfig config, serving::Service& service, serving::Metrics& metrics);

}  // namespace ds4::http
