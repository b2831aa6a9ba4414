// Shared endpoint helpers. See endpoint_support.hpp.
#include "gateway/http/endpoint_support.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include "gateway/http/request_limits.hpp"

namespace ds4::http {
namespace json = boost::json;

json::value parse_json_body(const HttpRequest& request) {
  if (request.body().empty()) throw protocol::RequestError("", "the request body is empty; send a JSON object");
  json::parse_options options;
  options.max_depth = 256;
  boost::system::error_code ec;
  json::value v = json::parse(request.body(), ec, {}, options);
  if (ec) throw protocol::RequestError("", "the request body is not valid JSON: " + ec.message());
  if (!v.is_object()) throw protocol::RequestError("", "the request body must be a JSON object");
  check_request_limits(v.get_object());
  return v;
}

ApiStyle api_style_of_path(std::string_view path) {
  constexpr std::string_view kMessages = "/v1/messages";
  if (path.starts_with(kMessages) && (path.size() == kMessages.size() || path[kMessages.size()] == '/'))
    return ApiStyle::Anthropic;
  return ApiStyle::OpenAI;
}

namespace {

std::string_view anthropic_error_type(unsigned status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 404) return "not_found_error";
  if (status == 413) return "request_too_large";
  if (status == 429) return "rate_limit_error";
  if (status == 503) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

}  // namespace

json::value error_body(ApiStyle style, unsigned status, std::string_view message, std::string_view param,
                       std::string_view code) {
  json::value body = api_error_body(status, message, param, code);
  if (style == ApiStyle::OpenAI) return body;
  // Same texts (made valid UTF-8 by api_error_body), Anthropic's envelope and type names.
  json::object& inner = body.as_object()["error"].as_object();
  json::object err;
  err["type"] = anthropic_error_type(status);
  err["message"] = inner["message"];
  if (!inner["param"].is_null()) err["param"] = inner["param"];
  if (!inner["code"].is_null()) err["code"] = inner["code"];
  return json::object{{"type", "error"}, {"error", std::move(err)}};
}

Reply error_reply(ApiStyle style, unsigned status, std::string_view message, std::string_view param,
                  std::string_view code) {
  return Reply::json(status, error_body(style, status, message, param, code));
}

Reply request_error_reply(const protocol::RequestError& error, ApiStyle style) {
  return error_reply(style, 400, error.message, error.param, "invalid_request");
}

Reply refusal_reply(const serving::Refusal& refusal, ApiStyle style) {
  Reply r = error_reply(style, refusal.http_status, refusal.message, {}, refusal.code);
  if (refusal.retry_after.count() > 0)
    r.head.headers.emplace_back("Retry-After", std::to_string(refusal.retry_after.count()));
  return r;
}

BackendOrReply require_backend(serving::Service& service, ApiStyle style) {
  BackendOrReply out;
  out.backend = service.backend();
  if (out.backend) return out;
  switch (service.state()) {
    case serving::ServiceState::loading:
      out.reply = refusal_reply({503, "loading", "the model is still loading", std::chrono::seconds(5)}, style);
      break;
    case serving::ServiceState::failed:
      out.reply = refusal_reply({503, "load_failed", "the model failed to load: " + service.failure(), {}}, style);
      break;
    default: out.reply = refusal_reply({503, "shutting_down", "the server is shutting down", {}}, style);
  }
  return out;
}

}  // namespace ds4::http
