#pragma once
// The submit path every chat-shaped endpoint shares (chat completions, Anthropic Messages,
// Responses): a protocol::ChatRequest, however it was spelled on the wire, goes through the one
// renderer with the contract store, the contract checks (metrics, 422 in strict mode), sampling,
// tokenization and the context check, and becomes a GenerationJob (with tools: the DSML-safe
// sampling policy that also enforces tool_choice required / forced functions); submit_turn() hands it to the
// engine with a TurnStream and answers with the deferred reply or the refusal. Errors come back
// as Replies in the calling API's shape.
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/api/endpoints.hpp"
#include "gateway/api/turn_stream.hpp"
#include "gateway/protocol/chat_render.hpp"

namespace ds4::http {

struct ChatTurn {
  std::shared_ptr<serving::EngineBackend> backend;
  protocol::RenderResult rendered;
  serving::GenerationJob job;  // prompt, sampling, limits; sink and cancel flag set by submit_turn
  protocol::openai::ContractReport contract;
  size_t protocol_tokens = 0;
  std::string model;  // the name responses carry
  bool thinking_started = false;
};

struct ChatTurnSpec {
  ApiStyle style = ApiStyle::OpenAI;
  // The request's conversation field, for error params: "messages" or "input".
  std::string conversation_param = "messages";
  // Client-side path of each ChatRequest message (violations name it); empty: "<param>[i]".
  std::vector<std::string> message_paths;
};

// The contract mode from the server configuration; throws std::invalid_argument when unknown.
protocol::ContractMode contract_mode_of(const ServerConfig& config);

// Either the prepared turn or the reply to answer with (400/422/503).
std::variant<ChatTurn, Reply> prepare_chat_turn(const EndpointEnv& env, protocol::ContractMode mode,
                                                const RequestContext& ctx, const protocol::ChatRequest& request,
                                                const ChatTurnSpec& spec);

// TurnOptions for a prepared chat turn (contract recording, protocol tokens, thinking start).
TurnOptions chat_turn_options(EndpointEnv env, const ChatTurn& turn, bool stream, std::string label);

// Queues the job with `stream` as its sink; the deferred reply, or the refusal (429/503).
Reply submit_turn(serving::Service& service, const RequestContext& ctx, serving::GenerationJob job,
                  std::shared_ptr<TurnStream> stream, ApiStyle style);

// A client's session hint as the serving layer keeps it: printable ASCII up to 128 bytes as
// sent, anything else hashed (it is logged with the request line). "" stays "".
std::string session_key(std::string_view hint);

}  // namespace ds4::http
