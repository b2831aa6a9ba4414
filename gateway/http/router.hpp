#pragma once
// Router: method + path -> handler, with the checks every endpoint shares.
//
// Order of decisions for one request: OPTIONS on any path is a CORS preflight (204, empty);
// an unknown path is 404; a known path with another method is 405 with an Allow header; a route
// that is not public needs `Authorization: Bearer <api_key>` (or `x-api-key: <api_key>`, as
// Anthropic clients send it) when a key is configured (401 with
// WWW-Authenticate otherwise; compared in constant time); then the handler runs. A handler that
// throws gets a logged 500. The endpoint label used in metrics is the route path, or "other".
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/reply.hpp"

namespace ds4::http {

struct RouterOptions {
  std::string api_key;  // empty: no auth
  bool cors = false;
};

class Router {
 public:
  using Handler = std::function<Reply(RequestContext&)>;

  explicit Router(RouterOptions options);

  // `is_public`: reachable without the API key (health probes).
  void add(std::string method, std::string path, Handler handler, bool is_public = false);

  struct Dispatched {
    Reply reply;
    std::string endpoint;  // metrics label
  };
  Dispatched dispatch(RequestContext& ctx) const;

  // Adds the CORS headers (when enabled) to any response head, streams included.
  void decorate(ResponseHead& head) const;

  // The path part of a request target (no query string, no fragment).
  static std::string_view path_of(std::string_view target);

 private:
  struct Route {
    std::string method, path;
    Handler handler;
    bool is_public;
  };
  bool authorized(const HttpRequest& req) const;

  RouterOptions options_;
  std::vector<Route> routes_;
};

}  // namespace ds4::http
