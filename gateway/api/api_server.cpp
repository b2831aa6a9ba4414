// The transport's Server with the API's endpoints. See api_server.hpp.
#include "gateway/api/api_server.hpp"

#include "gateway/api/endpoints.hpp"

namespace ds4::http {

std::unique_ptr<Server> make_api_server(ServerConfig config, serving::Service& service, serving::Metrics& metrics) {
  return std::make_unique<Server>(std::move(config), metrics,
                                  [&service, &metrics](Router& router, const ServerConfig& c) {
                                    add_endpoints(router, EndpointEnv{c, service, metrics});
                                  });
}

}  // namespace ds4::http
