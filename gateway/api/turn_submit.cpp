// The shared chat submit path. See turn_submit.hpp.
#include "gateway/api/turn_submit.hpp"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>

#include "gateway/api/generation_support.hpp"
#include "gateway/api/model_names.hpp"
#include "gateway/api/output_support.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/no_tool_calls_policy.hpp"

namespace ds4::http {
namespace openai = protocol::openai;

protocol::ContractMode contract_mode_of(const ServerConfig& config) {
  auto mode = protocol::parse_contract_mode(config.contract_mode);
  if (!mode)
    throw std::invalid_argument("contract mode must be off, warn or strict, not '" + config.contract_mode + "'");
  return *mode;
}

std::string session_key(std::string_view hint) {
  if (hint.empty()) return {};
  bool plain = hint.size() <= 128;
  for (unsigned char c : hint) plain = plain && c > 0x20 && c < 0x7f;
  if (plain) return std::string(hint);
  // Anything else (long, spaces, control bytes) is only a key: a hash of it, safe to log.
  return fmt::format("h{:016x}", std::hash<std::string_view>{}(hint));
}

std::variant<ChatTurn, Reply> prepare_chat_turn(const EndpointEnv& env, protocol::ContractMode mode,
                                                const RequestContext& ctx, const protocol::ChatRequest& request,
                                                const ChatTurnSpec& spec) {
  auto b = require_backend(env.service, spec.style);
  if (!b.backend) return std::move(b.reply);
  ChatTurn turn;
  turn.backend = b.backend;
  serving::EngineBackend& backend = *b.backend;
  if (auto unknown = unknown_model_reply(env.config, backend, request.model, spec.style)) return std::move(*unknown);

  protocol::RenderOptions options;
  options.context_length = backend.context_length();
  turn.rendered = protocol::render_chat(request, &env.service.contracts(), mode, options);
  const protocol::RenderResult& rendered = turn.rendered;
  for (const auto& v : rendered.violations)
    env.metrics.count_contract_violation(protocol::violation_kind_name(v.kind), protocol::contract_mode_name(mode));
  if (mode == protocol::ContractMode::Strict && !rendered.violations.empty()) {
    std::vector<std::string> paths = spec.message_paths;
    if (paths.empty())
      for (size_t i = 0; i < request.messages.size(); ++i)
        paths.push_back(spec.conversation_param + "[" + std::to_string(i) + "]");
    boost::json::object body = openai::contract_violation_body(rendered.violations, paths);
    if (spec.style == ApiStyle::Anthropic) {
      boost::json::object err = body["error"].as_object();
      err.erase("type");
      err["type"] = "invalid_request_error";
      body = boost::json::object{{"type", "error"}, {"error", std::move(err)}};
    }
    return Reply::json(422, body);
  }

  try {
    turn.job.sampling = sampling_for(request.sampling, rendered.thinking);
    turn.job.speculation = request.sampling.speculation.value_or(true);
    turn.job.max_tokens = max_tokens_for(request.max_tokens);
  } catch (const protocol::RequestError& e) {
    return request_error_reply(e, spec.style);
  }
  turn.job.prompt = backend.encode_prompt(rendered.text, rendered.plain_spans);
  if (turn.job.prompt.size() >= backend.context_length()) {
    boost::json::object body =
        openai::context_length_body(turn.job.prompt.size(), backend.context_length(), spec.conversation_param);
    if (spec.style == ApiStyle::Anthropic) {
      boost::json::object err = body["error"].as_object();
      body = boost::json::object{{"type", "error"}, {"error", std::move(err)}};
    }
    return Reply::json(400, body);
  }
  turn.job.stop = request.stop;
  turn.job.deadline = ctx.received + env.config.request_timeout;
  turn.contract = openai::ContractReport{mode, rendered.violations, rendered.replayed_blocks, rendered.canonical_blocks,
                                         rendered.repaired_reasoning};
  turn.protocol_tokens = protocol_token_count(backend, turn.job.prompt, rendered.client_spans);
  turn.model = response_model(env.config, backend, request.model);
  turn.thinking_started = rendered.text.ends_with("<think>");
  turn.job.session = session_key(request.session_hint);
  // With tools: DSML structure greedy, payload with the request's sampling, tool_choice
  // required / forced functions, and calls only to the request's tools with their parameter
  // names, enforced on the tokens (serving/dsml_token_policy.hpp).
  try {
    turn.job.policy = serving::chat_tool_policy(turn.backend, request, rendered.tools_active, turn.thinking_started);
    // response_format / text.format, logit_bias, logprobs (output_support.hpp).
    apply_output_controls(turn.job, turn.backend, request.output, request.stream, rendered.tools_active,
                          turn.thinking_started);
    // No tools (or tool_choice none): the output cannot open a block (no_tool_calls_policy.hpp).
    // A JSON response_format policy restricts the answer to JSON, which opens no block either.
    if (!rendered.tools_active && !turn.job.policy)
      turn.job.policy = std::make_shared<serving::NoToolCallsPolicy>(turn.thinking_started);
  } catch (const protocol::RequestError& e) {
    return request_error_reply(e, spec.style);
  }
  return turn;
}

TurnOptions chat_turn_options(EndpointEnv env, const ChatTurn& turn, bool stream, std::string label) {
  TurnOptions o;
  o.stream = stream;
  o.parse_chat = true;
  o.thinking_started = turn.thinking_started;
  o.tool_calls = turn.rendered.tools_active;
  o.contracts_of = &env.service;
  o.turn_anchor = turn.rendered.turn_anchor;
  o.contract = turn.contract;
  o.protocol_tokens = turn.protocol_tokens;
  o.client_limited = turn.job.max_tokens != 0;
  o.label = std::move(label);
  return o;
}

Reply submit_turn(serving::Service& service, const RequestContext& ctx, serving::GenerationJob job,
                  std::shared_ptr<TurnStream> stream, ApiStyle style) {
  auto channel = std::make_shared<ResponseChannel>(ctx.executor);
  stream->attach(channel);
  job.cancelled = channel->cancel_flag();
  job.sink = std::move(stream);
  if (auto refusal = service.submit(std::move(job))) return refusal_reply(*refusal, style);
  return Reply::deferred(std::move(channel));
}

}  // namespace ds4::http
