#pragma once
// Router: method + path -> handler, with the checks every endpoint shares (Host, Origin, CORS
// preflight, method, Content-Type, API key), each refusal in the error shape of the path's API
// (api_style_of_path). The order of the checks and what each answers:
// docs/api.md §request-checks.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/transport/reply.hpp"

namespace ds4::http {

struct RouterOptions {
  std::string api_key;                     // empty: no auth
  std::vector<std::string> cors_origins;   // "scheme://host[:port]" or "*"
  std::vector<std::string> allowed_hosts;  // extra Host names (no port), or "*"
  std::string bind_host;                   // the listen address, allowed as a Host name
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

  // Adds the CORS headers to any response head (streams included) when `origin` (the request's
  // Origin header, "" if none) is allowed.
  void decorate(ResponseHead& head, std::string_view origin) const;
  // The request's Origin header ("" when absent).
  static std::string_view origin_of(const HttpRequest& req);

  // The path part of a request target (no query string, no fragment).
  static std::string_view path_of(std::string_view target);

 private:
  struct Route {
    std::string method, path;
    Handler handler;
    bool is_public;
  };
  bool authorized(const HttpRequest& req) const;
  bool host_allowed(std::string_view host) const;
  bool origin_allowed(std::string_view origin) const;

  RouterOptions options_;
  std::vector<Route> routes_;
};

}  // namespace ds4::http
