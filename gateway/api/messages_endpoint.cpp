// POST /v1/messages: the Anthropic Messages API (what Claude Code speaks), on the shared path.
//
// The request is translated into a ChatRequest (protocol/anthropic_request.hpp) and prepared by
// prepare_chat_turn like OpenAI chat; the tool-call ids we issue are the tool_use ids, so echoed
// tool_use blocks replay the sampled DSML byte for byte. MessagesFormat writes Anthropic's stream
// lifecycle. Headers accepted, stop reasons, cut tool calls and errors: docs/api.md §messages.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/api/endpoints.hpp"
#include "gateway/api/generation_support.hpp"
#include "gateway/api/turn_submit.hpp"
#include "gateway/protocol/anthropic_request.hpp"
#include "gateway/protocol/anthropic_shapes.hpp"

namespace ds4::http {
namespace json = boost::json;
namespace openai = protocol::openai;
namespace anthropic = protocol::anthropic;

namespace {

anthropic::StopReason stop_reason_of(const TurnOutcome& o) {
  if (o.finish == ClientFinish::ToolCalls) return anthropic::StopReason::ToolUse;
  if (o.finish == ClientFinish::Length) return anthropic::StopReason::MaxTokens;
  if (o.result.finish == serving::FinishReason::StopSequence) return anthropic::StopReason::StopSequence;
  return anthropic::StopReason::EndTurn;
}

std::string failure_text(const TurnOutcome& o) {
  return "generation failed: " + (o.result.error.empty() ? std::string("cancelled") : o.result.error);
}

class MessagesFormat final : public TurnFormat {
 public:
  MessagesFormat(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}

  std::string open(const serving::GenerationUsage& usage) override {
    openai::Usage u;
    u.prompt_tokens = usage.prompt_tokens;
    u.cached_tokens = usage.cached_tokens;
    return anthropic::sse_event("message_start", anthropic::message_start(id_, model_, u)) +
           anthropic::sse_event("ping", anthropic::ping());
  }

  std::string events(const std::vector<protocol::Event>& events) override {
    std::string out;
    for (const auto& event : events) {
      if (auto* r = std::get_if<protocol::ReasoningDelta>(&event)) {
        if (r->text.empty()) continue;
        enter(Block::Thinking, out);
        out += delta("thinking_delta", r->text);
      } else if (auto* c = std::get_if<protocol::ContentDelta>(&event)) {
        if (c->text.empty()) continue;
        enter(Block::Text, out);
        out += delta("text_delta", c->text);
      } else if (auto* b = std::get_if<protocol::ToolCallBegin>(&event)) {
        leave(out);
        current_ = Block::ToolUse;
        saw_tool_or_text_ = true;
        out += anthropic::sse_event("content_block_start", anthropic::block_start_tool_use(index_, b->id, b->name));
      } else if (auto* a = std::get_if<protocol::ToolCallArgumentsDelta>(&event)) {
        if (current_ == Block::ToolUse && !a->fragment.empty()) out += delta("input_json_delta", a->fragment);
      } else if (std::holds_alternative<protocol::ToolCallEnd>(event)) {
        leave(out);
      }
    }
    return out;
  }

  std::string close(const TurnOutcome& o) override {
    std::string out;
    leave(out);
    if (o.finish == ClientFinish::Error) {
      out += anthropic::sse_event("error", anthropic::stream_error("api_error", failure_text(o)));
      return out;
    }
    if (!saw_tool_or_text_) {  // an empty text block, as the non-streamed message has
      out += anthropic::sse_event("content_block_start", anthropic::block_start_text(index_));
      out += anthropic::sse_event("content_block_stop", anthropic::block_stop(index_));
      ++index_;
    }
    out += anthropic::sse_event("message_delta", anthropic::message_delta(stop_reason_of(o), o.usage, &o.ds4d));
    out += anthropic::sse_event("message_stop", anthropic::message_stop());
    return out;
  }

  ResponseHead whole(const TurnOutcome& o) override {
    if (o.finish == ClientFinish::Error) return error(500, failure_text(o));
    anthropic::MessageOutput output;
    output.thinking = o.message->reasoning;
    output.signature = id_;
    output.text = o.message->content;
    for (const auto& call : o.message->calls)
      if (call.closed) output.tool_uses.push_back({call.id, call.name, call.arguments_json});
    return json_head(
        200, json::serialize(anthropic::message_json(id_, model_, output, stop_reason_of(o), o.usage, &o.ds4d)));
  }

  ResponseHead error(unsigned status, const std::string& message) override {
    return json_head(status, json::serialize(error_body(ApiStyle::Anthropic, status, message)));
  }

 private:
  enum class Block { None, Thinking, Text, ToolUse };

  std::string delta(std::string_view type, std::string_view text) {
    return anthropic::sse_event("content_block_delta", anthropic::block_delta(index_, type, text));
  }
  void enter(Block kind, std::string& out) {
    if (current_ == kind) return;
    leave(out);
    current_ = kind;
    if (kind == Block::Text) saw_tool_or_text_ = true;
    out += anthropic::sse_event("content_block_start", kind == Block::Thinking ? anthropic::block_start_thinking(index_)
                                                                               : anthropic::block_start_text(index_));
  }
  void leave(std::string& out) {
    if (current_ == Block::None) return;
    if (current_ == Block::Thinking) out += delta("signature_delta", id_);
    out += anthropic::sse_event("content_block_stop", anthropic::block_stop(index_));
    ++index_;
    current_ = Block::None;
  }

  std::string id_, model_;
  Block current_ = Block::None;
  size_t index_ = 0;
  bool saw_tool_or_text_ = false;
};

}  // namespace

void add_messages_endpoint(Router& router, EndpointEnv env) {
  protocol::ContractMode mode = contract_mode_of(env.config);
  router.add("POST", "/v1/messages", [env, mode](RequestContext& ctx) {
    protocol::AnthropicRequest request;
    try {
      request = protocol::parse_anthropic_request(parse_json_body(ctx.request));
    } catch (const protocol::RequestError& e) {
      return request_error_reply(e, ApiStyle::Anthropic);
    }
    for (const auto& name : request.ignored_tools)
      spdlog::debug("messages: tool '{}' is a server tool with no definition to render; left out", name);
    // Claude Code names its session in a header: the warm-state routing hint.
    if (auto h = ctx.request.find("X-Claude-Code-Session-Id"); h != ctx.request.end())
      request.chat.session_hint = std::string(h->value().data(), h->value().size());
    ChatTurnSpec spec{ApiStyle::Anthropic, "messages", request.message_paths};
    auto prepared = prepare_chat_turn(env, mode, ctx, request.chat, spec);
    if (auto* reply = std::get_if<Reply>(&prepared)) return std::move(*reply);
    ChatTurn& turn = std::get<ChatTurn>(prepared);

    std::string id = new_response_id("msg_");
    TurnOptions options = chat_turn_options(env, turn, request.chat.stream, id);
    auto stream = std::make_shared<TurnStream>(std::make_unique<MessagesFormat>(id, turn.model), options);
    return submit_turn(env.service, ctx, std::move(turn.job), std::move(stream), ApiStyle::Anthropic);
  });
}

}  // namespace ds4::http
