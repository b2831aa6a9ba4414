// Shared endpoint helpers. See endpoint_support.hpp.
#include "gateway/api/endpoint_support.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include "gateway/api/request_limits.hpp"

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
    case serving::ServiceState::Loading:
      out.reply = refusal_reply({503, "loading", "the model is still loading", std::chrono::seconds(5)}, style);
      break;
    case serving::ServiceState::Failed:
      out.reply = refusal_reply({503, "load_failed", "the model failed to load: " + service.failure(), {}}, style);
      break;
    default: out.reply = refusal_reply({503, "shutting_down", "the server is shutting down", {}}, style);
  }
  return out;
}

}  // namespace ds4::http
