#pragma once
// Small pieces every model endpoint uses: reading the JSON body, turning RequestError and
// serving refusals into error replies in the API's own shape, and getting the backend or a 503.
//
// Error shapes: OpenAI (chat, completions, responses) {"error":{"message","type","param","code"}};
// Anthropic (/v1/messages) {"type":"error","error":{"type","message"}} with Anthropic's type
// names (invalid_request_error, authentication_error, not_found_error, rate_limit_error,
// api_error, overloaded_error), plus `param`/`code` inside `error` when known (extra keys that
// the SDKs ignore but that say which field was wrong).
#include <boost/json/value.hpp>
#include <memory>

#include "gateway/http/reply.hpp"
#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {

enum class ApiStyle { OpenAI, Anthropic };

// The error shape a request path answers in: Anthropic for /v1/messages and below it, OpenAI
// elsewhere. The router and the connection use it for the errors they raise before any handler
// runs (401, 403, 404, 405, 413, 415, 431, malformed requests, 503 busy).
ApiStyle api_style_of_path(std::string_view path);

boost::json::value error_body(ApiStyle style, unsigned status, std::string_view message, std::string_view param = {},
                              std::string_view code = {});
Reply error_reply(ApiStyle style, unsigned status, std::string_view message, std::string_view param = {},
                  std::string_view code = {});

// Parses the body as JSON (nesting limit 256) and checks its identifier bounds
// (request_limits.hpp). Throws protocol::RequestError on bad JSON or an identifier too long.
boost::json::value parse_json_body(const HttpRequest& request);

// 400 with `param` set to the JSON path of the bad field.
Reply request_error_reply(const protocol::RequestError& error, ApiStyle style = ApiStyle::OpenAI);

// 429/503 with Retry-After when the refusal carries one.
Reply refusal_reply(const serving::Refusal& refusal, ApiStyle style = ApiStyle::OpenAI);

// The backend, or a 503 reply saying why there is none (loading, failed, stopping).
struct BackendOrReply {
  std::shared_ptr<serving::EngineBackend> backend;
  Reply reply;
};
BackendOrReply require_backend(serving::Service& service, ApiStyle style = ApiStyle::OpenAI);

}  // namespace ds4::http
