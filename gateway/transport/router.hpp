#pragma once
// Router: method + path -> handler, with the checks every endpoint shares.
//
// Order of decisions for one request, each refusal in the error shape of the path's API
// (Anthropic's for /v1/messages, OpenAI's elsewhere; api_style_of_path):
//   0. More than one Host header is 400 (RFC 9112 3.2).
//   1. Host (DNS rebinding: a web page whose name resolves to 127.0.0.1 sends its own Host):
//      checked when no API key is set or when allowed_hosts is given; loopback names
//      (localhost, *.localhost, 127.x.x.x, [::1]) and the bind address are always allowed,
//      "*" allows any. Else 403 (code host_not_allowed); HTTP/1.1 without Host is 400.
//   2. Origin (sent by browsers): must be one of cors_origins ("*": any), else 403
//      (origin_not_allowed). Requests without Origin (curl, SDKs) pass.
//   3. OPTIONS is a CORS preflight: 204 with the CORS headers for an allowed Origin; otherwise
//      it is a method like any other (405).
//   4. An unknown path is 404; HEAD is served by the GET route (the connection sends no body);
//      a known path with another method is 405 with an Allow header.
//   5. POST bodies must be Content-Type application/json (415 otherwise): text/plain and form
//      posts are what a web page can send cross-origin without a preflight.
//   6. A route that is not public needs `Authorization: Bearer <api_key>` (or `x-api-key:
//      <api_key>`, as Anthropic clients send it) when a key is configured (401 with WWW-Authenticate otherwise;
//      compared in constant time).
//   7. The handler runs; one that throws gets a logged 500.
// CORS headers (Access-Control-Allow-Origin: <that origin>, Vary: Origin) go only on answers
// to an allowed Origin. The endpoint label used in metrics is the route path, or "other".
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
