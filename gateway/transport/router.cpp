// Routing, auth, CORS and the 404/405/401/500 answers. See router.hpp.
#include "gateway/transport/router.hpp"

#include <spdlog/spdlog.h>

#include <cctype>

namespace ds4::http {
namespace http = boost::beast::http;

namespace {

// Compares without an early exit, so the time taken does not reveal how much of a key matched.
bool equal_constant_time(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The name part of a Host header value: "[::1]:8080" -> "[::1]", "Example:80" -> "example".
std::string host_name(std::string_view value) {
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (!value.empty() && value.front() == '[') {
    size_t end = value.find(']');
    return lower(end == std::string_view::npos ? value : value.substr(0, end + 1));
  }
  size_t colon = value.find(':');
  std::string name = lower(colon == std::string_view::npos ? value : value.substr(0, colon));
  if (!name.empty() && name.back() == '.') name.pop_back();  // "localhost." is localhost
  return name;
}

bool is_loopback_name(const std::string& name) {
  if (name == "localhost" || name.ends_with(".localhost") || name == "[::1]") return true;
  // 127.0.0.0/8, dotted quad only.
  if (!name.starts_with("127.")) return false;
  int dots = 0;
  for (char c : name) {
    if (c == '.') ++dots;
    else if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return dots == 3;
}

}  // namespace

Router::Router(RouterOptions options) : options_(std::move(options)) {
  for (auto& o : options_.cors_origins) o = lower(o);
  for (auto& h : options_.allowed_hosts) h = host_name(h);
  options_.bind_host = host_name(options_.bind_host.find(':') != std::string::npos && options_.bind_host.front() != '['
                                     ? "[" + options_.bind_host + "]"
                                     : options_.bind_host);
}

bool Router::host_allowed(std::string_view value) const {
  std::string name = host_name(value);
  if (name.empty()) return false;
  if (is_loopback_name(name)) return true;
  if (name == options_.bind_host && options_.bind_host != "0.0.0.0" && options_.bind_host != "[::]") return true;
  for (const auto& h : options_.allowed_hosts)
    if (h == "*" || h == name) return true;
  return false;
}

bool Router::origin_allowed(std::string_view origin) const {
  if (origin.empty()) return false;
  std::string o = lower(origin);
  for (const auto& allowed : options_.cors_origins)
    if (allowed == "*" || allowed == o) return true;
  return false;
}

std::string_view Router::origin_of(const HttpRequest& req) {
  auto it = req.find(http::field::origin);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

void Router::add(std::string method, std::string path, Handler handler, bool is_public) {
  routes_.push_back(Route{std::move(method), std::move(path), std::move(handler), is_public});
}

std::string_view Router::path_of(std::string_view target) {
  size_t end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

bool Router::authorized(const HttpRequest& req) const {
  if (options_.api_key.empty()) return true;
  // Anthropic clients (Claude Code, @anthropic-ai/sdk) send the key as x-api-key.
  if (auto key = req.find("x-api-key"); key != req.end())
    return equal_constant_time(std::string_view(key->value().data(), key->value().size()), options_.api_key);
  auto it = req.find(http::field::authorization);
  if (it == req.end()) return false;
  std::string_view value(it->value().data(), it->value().size());
  constexpr std::string_view kScheme = "Bearer ";
  if (value.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != std::tolower(static_cast<unsigned char>(kScheme[i])))
      return false;
  value.remove_prefix(kScheme.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return equal_constant_time(value, options_.api_key);
}

void Router::decorate(ResponseHead& head, std::string_view origin) const {
  if (!origin_allowed(origin)) return;
  head.headers.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  head.headers.emplace_back("Vary", "Origin");
  head.headers.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
  head.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
  head.headers.emplace_back("Access-Control-Max-Age", "600");
}

Router::Dispatched Router::dispatch(RequestContext& ctx) const {
  const HttpRequest& req = ctx.request;
  std::string_view method(req.method_string().data(), req.method_string().size());
  // Each refusal below in the shape of the API the path belongs to (Anthropic for /v1/messages).
  const ApiStyle style = api_style_of_path(ctx.path);
  auto refuse = [style](unsigned status, std::string_view message, std::string_view code) {
    return error_reply(style, status, message, {}, code);
  };
  // RFC 9112 3.2: a request with more than one Host field is answered 400 (which one a proxy
  // in front used is unknown).
  auto [host_first, host_last] = req.equal_range(http::field::host);
  if (host_first != host_last && std::next(host_first) != host_last)
    return {refuse(400, "the request has more than one Host header", "duplicate_host"), "other"};
  if (options_.api_key.empty() || !options_.allowed_hosts.empty()) {
    auto host = req.find(http::field::host);
    if (host == req.end()) {
      if (req.version() >= 11) return {refuse(400, "the request has no Host header", "missing_host"), "other"};
    } else if (std::string_view value(host->value().data(), host->value().size()); !host_allowed(value)) {
      return {refuse(403,
                     "Host '" + std::string(value) +
                         "' is not allowed (loopback names and server.allowed_hosts are); this guards "
                         "against DNS rebinding",
                     "host_not_allowed"),
              "other"};
    }
  }
  std::string_view origin = origin_of(req);
  if (!origin.empty() && !origin_allowed(origin))
    return {refuse(403, "Origin '" + std::string(origin) + "' is not allowed; list it in server.cors_origins",
                   "origin_not_allowed"),
            "other"};
  if (method == "OPTIONS" && !origin.empty()) {
    Reply r;
    r.head.status = 204;
    return {std::move(r), "preflight"};
  }
  std::string allow;
  const Route* match = nullptr;
  // HEAD is GET without the body (the connection drops it; RFC 9110 9.3.2).
  std::string_view route_method = method == "HEAD" ? std::string_view("GET") : method;
  for (const auto& route : routes_) {
    if (route.path != ctx.path) continue;
    if (route.method == route_method) {
      match = &route;
      break;
    }
    allow += (allow.empty() ? "" : ", ") + route.method + (route.method == "GET" ? ", HEAD" : "");
  }
  if (!match) {
    if (allow.empty()) return {refuse(404, "unknown endpoint " + std::string(ctx.path), "not_found"), "other"};
    Reply r =
        refuse(405, std::string(method) + " is not allowed on " + std::string(ctx.path) + " (allowed: " + allow + ")",
               "method_not_allowed");
    r.head.headers.emplace_back("Allow", allow);
    return {std::move(r), std::string(ctx.path)};
  }
  if (method == "POST") {
    auto type = req.find(http::field::content_type);
    std::string_view value =
        type == req.end() ? std::string_view() : std::string_view(type->value().data(), type->value().size());
    std::string media = lower(value.substr(0, value.find(';')));
    while (!media.empty() && media.back() == ' ') media.pop_back();
    if (media != "application/json")
      return {refuse(415,
                     "POST bodies must be Content-Type: application/json" +
                         (value.empty() ? std::string(" (none was sent)") : ", not '" + std::string(value) + "'"),
                     "unsupported_media_type"),
              match->path};
  }
  if (!match->is_public && !authorized(ctx.request)) {
    Reply r = refuse(401, "missing or invalid API key: send Authorization: Bearer <key> (or x-api-key: <key>)",
                     "invalid_api_key");
    r.head.headers.emplace_back("WWW-Authenticate", "Bearer");
    return {std::move(r), match->path};
  }
  try {
    return {match->handler(ctx), match->path};
  } catch (const std::exception& e) {
    spdlog::error("http: {} {} failed: {}", method, ctx.path, e.what());
    return {refuse(500, std::string("internal error: ") + e.what(), {}), match->path};
  }
}

}  // namespace ds4::http
