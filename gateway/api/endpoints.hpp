#pragma once
// The endpoint set, registered on a Router. Each group lives in its own file:
//   service_endpoints.cpp  GET /health, /health/live, /metrics, /v1/models
//   token_endpoints.cpp    POST /tokenize, /detokenize
//   chat_endpoint.cpp      POST /v1/chat/completions
//   completion_endpoint.cpp POST /v1/completions
//   messages_endpoint.cpp  POST /v1/messages (Anthropic)
//   responses_endpoint.cpp POST /v1/responses (OpenAI Responses)
//   engine_endpoint.cpp    GET /engine/info, POST /engine/generate (token level, for gateways)
// The model endpoints share one submit/streaming path: turn_submit.hpp, turn_stream.hpp.
#include "gateway/transport/router.hpp"
#include "gateway/transport/server.hpp"

namespace ds4::serving {
class Service;
class Metrics;
}  // namespace ds4::serving

namespace ds4::http {

struct EndpointEnv {
  const ServerConfig& config;
  serving::Service& service;
  serving::Metrics& metrics;
};

void add_endpoints(Router& router, EndpointEnv env);

void add_service_endpoints(Router& router, EndpointEnv env);
void add_token_endpoints(Router& router, EndpointEnv env);
void add_chat_endpoint(Router& router, EndpointEnv env);
void add_completion_endpoint(Router& router, EndpointEnv env);
void add_messages_endpoint(Router& router, EndpointEnv env);
void add_responses_endpoint(Router& router, EndpointEnv env);
void add_engine_endpoints(Router& router, EndpointEnv env);

}  // namespace ds4::http
