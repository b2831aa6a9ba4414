// Routing, auth, CORS and the 404/405/401/500 answers. See router.hpp.
#include "gateway/http/router.hpp"

#include <spdlog/spdlog.h>

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

}  // namespace

Router::Router(RouterOptions options) : options_(std::move(options)) {}

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

void Router::decorate(ResponseHead& head) const {
  if (!options_.cors) return;
  head.headers.emplace_back("Access-Control-Allow-Origin", "*");
  head.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  head.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
  head.headers.emplace_back("Access-Control-Max-Age", "600");
}

Router::Dispatched Router::dispatch(RequestContext& ctx) const {
  std::string_view method(ctx.request.method_string().data(), ctx.request.method_string().size());
  if (method == "OPTIONS") {
    Reply r;
    r.head.status = 204;
    return {std::move(r), "preflight"};
  }
  std::string allow;
  const Route* match = nullptr;
  for (const auto& route : routes_) {
    if (route.path != ctx.path) continue;
    if (route.method == method) {
      match = &route;
      break;
    }
    allow += (allow.empty() ? "" : ", ") + route.method;
  }
  if (!match) {
    if (allow.empty())
      return {api_error(404, "unknown endpoint " + std::string(ctx.path), {}, "not_found"), "other"};
    Reply r = api_error(405, std::string(method) + " is not allowed on " + std::string(ctx.path) + " (allowed: " +
                                 allow + ")", {}, "method_not_allowed");
    r.head.headers.emplace_back("Allow", allow);
    return {std::move(r), std::string(ctx.path)};
  }
  if (!match->is_public && !authorized(ctx.request)) {
    Reply r = api_error(401, "missing or invalid API key: send Authorization: Bearer <key> (or x-api-key: <key>)", {}, "invalid_api_key");
    r.head.headers.emplace_back("WWW-Authenticate", "Bearer");
    return {std::move(r), match->path};
  }
  try {
    return {match->handler(ctx), match->path};
  } catch (const std::exception& e) {
    spdlog::error("http: {} {} failed: {}", method, ctx.path, e.what());
    return {api_error(500, std::string("internal error: ") + e.what()), match->path};
  }
}

}  // namespace ds4::http
