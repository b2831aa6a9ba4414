// Reply builders and the error shapes (OpenAI's, Anthropic's). See reply.hpp.
#include "gateway/transport/reply.hpp"

#include <boost/json/serialize.hpp>

#include "gateway/protocol/utf8_assembler.hpp"

namespace ds4::http {
namespace json = boost::json;

Reply Reply::json(unsigned status, const json::value& body) {
  Reply r;
  r.head.status = status;
  r.head.headers.emplace_back("Content-Type", "application/json");
  r.head.body = json::serialize(body);
  return r;
}

Reply Reply::text(unsigned status, std::string content_type, std::string body) {
  Reply r;
  r.head.status = status;
  r.head.headers.emplace_back("Content-Type", std::move(content_type));
  r.head.body = std::move(body);
  return r;
}

Reply Reply::deferred(std::shared_ptr<ResponseChannel> channel) {
  Reply r;
  r.channel = std::move(channel);
  return r;
}

static std::string_view default_error_type(unsigned status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 404) return "not_found_error";
  if (status == 429) return "rate_limit_error";
  if (status == 503) return "service_unavailable_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

// Error texts may quote client bytes (a request path, a field value); JSON needs valid UTF-8.
static std::string valid_utf8(std::string_view bytes) {
  protocol::Utf8Assembler assembler;
  std::string out = assembler.push(bytes);
  return out + assembler.flush();
}

json::value api_error_body(unsigned status, std::string_view message, std::string_view param, std::string_view code,
                           std::string_view type) {
  json::object err;
  err["message"] = valid_utf8(message);
  err["type"] = type.empty() ? default_error_type(status) : type;
  err["param"] = param.empty() ? json::value(nullptr) : json::value(valid_utf8(param));
  err["code"] = code.empty() ? json::value(nullptr) : json::value(code);
  return json::object{{"error", std::move(err)}};
}

Reply api_error(unsigned status, std::string_view message, std::string_view param, std::string_view code,
                std::string_view type) {
  return Reply::json(status, api_error_body(status, message, param, code, type));
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

}  // namespace ds4::http
