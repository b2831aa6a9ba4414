#pragma once
// Small pieces every model endpoint uses: reading the JSON body, turning RequestError and
// serving refusals into OpenAI error replies, and getting the backend or a 503.
#include <boost/json/value.hpp>
#include <memory>

#include "gateway/http/reply.hpp"
#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {

// Parses the body as JSON (nesting limit 256). Throws protocol::RequestError on bad JSON.
boost::json::value parse_json_body(const HttpRequest& request);

// 400 with `param` set to the JSON path of the bad field.
Reply request_error_reply(const protocol::RequestError& error);

// 429/503 with Retry-After when the refusal carries one.
Reply refusal_reply(const serving::Refusal& refusal);

// The backend, or a 503 reply saying why there is none (loading, failed, stopping).
struct BackendOrReply {
  std::shared_ptr<serving::EngineBackend> backend;
  Reply reply;
};
BackendOrReply require_backend(serving::Service& service);

}  // namespace ds4::http
