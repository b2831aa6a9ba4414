#pragma once
// Small pieces every model endpoint uses: reading the JSON body, turning RequestError and
// serving refusals into error replies in the API's own shape (reply.hpp), and getting the
// backend or a 503.
#include <boost/json/value.hpp>
#include <memory>

#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/transport/reply.hpp"

namespace ds4::http {

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
