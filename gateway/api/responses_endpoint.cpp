// POST /v1/responses: the OpenAI Responses API (what Codex CLI speaks), on the shared path.
//
// The request becomes a ChatRequest (protocol/responses_request.hpp) and is prepared by
// prepare_chat_turn like chat; previous_response_id is resolved through ResponseHistory
// (response_history.hpp). ResponsesFormat streams Codex's event lifecycle, each event with a
// sequence_number. The lifecycle, the final statuses and cut function calls: docs/api.md §responses.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/api/endpoints.hpp"
#include "gateway/api/generation_support.hpp"
#include "gateway/api/output_support.hpp"
#include "gateway/api/response_history.hpp"
#include "gateway/api/turn_submit.hpp"
#include "gateway/protocol/responses_request.hpp"
#include "gateway/protocol/responses_shapes.hpp"

namespace ds4::http {
namespace json = boost::json;
namespace openai = protocol::openai;
namespace responses = protocol::responses;

namespace {

responses::Status status_of(const TurnOutcome& o) {
  if (o.finish == ClientFinish::Error) return responses::Status::Failed;
  if (o.finish == ClientFinish::Length) return responses::Status::Incomplete;
  return responses::Status::Completed;
}

std::string failure_text(const TurnOutcome& o) {
  return "generation failed: " + (o.result.error.empty() ? std::string("cancelled") : o.result.error);
}

class ResponsesFormat final : public TurnFormat {
 public:
  ResponsesFormat(responses::ResponseMeta meta, std::shared_ptr<ResponseHistory> history,
                  std::vector<protocol::Message> conversation, bool logprobs)
      : meta_(std::move(meta)),
        history_(std::move(history)),
        conversation_(std::move(conversation)),
        logprobs_(logprobs) {}

  std::string open(const serving::GenerationUsage&) override {
    json::object snapshot = responses::response_json(meta_, responses::Status::InProgress, {}, nullptr);
    std::string out = event("response.created", {{"response", snapshot}});  // sequence numbers in order
    out += event("response.in_progress", {{"response", snapshot}});
    return out;
  }

  std::string events(const std::vector<protocol::Event>& events) override {
    std::string out;
    for (const auto& e : events) {
      if (auto* r = std::get_if<protocol::ReasoningDelta>(&e)) {
        if (r->text.empty()) continue;
        enter(Item::Reasoning, out);
        reasoning_ += r->text;
        out += event("response.reasoning_summary_text.delta",
                     {{"item_id", item_id_}, {"output_index", index_}, {"summary_index", 0}, {"delta", r->text}});
      } else if (auto* c = std::get_if<protocol::ContentDelta>(&e)) {
        if (c->text.empty()) continue;
        enter(Item::Message, out);
        text_ += c->text;
        out += event("response.output_text.delta",
                     {{"item_id", item_id_}, {"output_index", index_}, {"content_index", 0}, {"delta", c->text}});
      } else if (auto* b = std::get_if<protocol::ToolCallBegin>(&e)) {
        leave(out);
        current_ = Item::Call;
        item_id_ = new_response_id("fc_");
        call_id_ = b->id;
        call_name_ = b->name;
        out += event("response.output_item.added",
                     {{"output_index", index_},
                      {"item", responses::function_call_item(item_id_, call_id_, call_name_, "", false)}});
      } else if (auto* a = std::get_if<protocol::ToolCallArgumentsDelta>(&e)) {
        if (current_ != Item::Call || a->fragment.empty()) continue;
        out += event("response.function_call_arguments.delta",
                     {{"item_id", item_id_}, {"output_index", index_}, {"delta", a->fragment}});
      } else if (auto* end = std::get_if<protocol::ToolCallEnd>(&e)) {
        if (current_ != Item::Call) continue;
        arguments_ = end->arguments_json;
        leave(out);
      }
    }
    return out;
  }

  std::string close(const TurnOutcome& o) override {
    std::string out;
    if (current_ == Item::Call) current_ = Item::None;  // its </invoke> never came: not a call
    leave(out);
    responses::Status status = status_of(o);
    remember(o);
    json::object response = responses::response_json(
        meta_, status, output_, &o.usage, status == responses::Status::Failed ? failure_text(o) : "", &o.ds4d);
    const char* type = status == responses::Status::Failed       ? "response.failed"
                       : status == responses::Status::Incomplete ? "response.incomplete"
                                                                 : "response.completed";
    out += event(type, {{"response", std::move(response)}});
    return out;
  }

  ResponseHead whole(const TurnOutcome& o) override {
    const protocol::ParsedMessage& m = *o.message;
    json::array output;
    if (m.reasoning) output.push_back(responses::reasoning_item(new_response_id("rs_"), *m.reasoning, true));
    bool any_call = false;
    for (const auto& c : m.calls) any_call = any_call || c.closed;
    if (!m.content.empty() || !any_call) {
      json::object item = responses::message_item(new_response_id("msg_"), m.content, true);
      if (logprobs_)  // top_logprobs: every generated token's (output_support.hpp)
        item["content"].as_array()[0].as_object()["logprobs"] = responses_logprobs(o.result.logprobs);
      output.push_back(std::move(item));
    }
    for (const auto& c : m.calls)
      if (c.closed)
        output.push_back(responses::function_call_item(new_response_id("fc_"), c.id, c.name, c.arguments_json, true));
    responses::Status status = status_of(o);
    remember(o);
    return json_head(200, json::serialize(responses::response_json(
                              meta_, status, std::move(output), &o.usage,
                              status == responses::Status::Failed ? failure_text(o) : "", &o.ds4d)));
  }

  ResponseHead error(unsigned status, const std::string& message) override {
    return json_head(status, json::serialize(api_error_body(status, message, {}, {}, "server_error")));
  }

 private:
  enum class Item { None, Reasoning, Message, Call };

  std::string event(std::string_view type, json::object fields) {
    return responses::sse_event(type, sequence_++, fields);
  }

  void enter(Item kind, std::string& out) {
    if (current_ == kind) return;
    leave(out);
    current_ = kind;
    if (kind == Item::Reasoning) {
      item_id_ = new_response_id("rs_");
      reasoning_.clear();
      out += event("response.output_item.added",
                   {{"output_index", index_}, {"item", responses::reasoning_item(item_id_, "", false)}});
      out += event("response.reasoning_summary_part.added",
                   {{"item_id", item_id_},
                    {"output_index", index_},
                    {"summary_index", 0},
                    {"part", json::object{{"type", "summary_text"}, {"text", ""}}}});
    } else {
      item_id_ = new_response_id("msg_");
      text_.clear();
      out += event("response.output_item.added",
                   {{"output_index", index_}, {"item", responses::message_item(item_id_, "", false)}});
      out += event("response.content_part.added",
                   {{"item_id", item_id_},
                    {"output_index", index_},
                    {"content_index", 0},
                    {"part", json::object{{"type", "output_text"}, {"text", ""}, {"annotations", json::array{}}}}});
    }
  }

  void leave(std::string& out) {
    json::object item;
    switch (current_) {
      case Item::None: return;
      case Item::Reasoning:
        out += event("response.reasoning_summary_text.done",
                     {{"item_id", item_id_}, {"output_index", index_}, {"summary_index", 0}, {"text", reasoning_}});
        out += event("response.reasoning_summary_part.done",
                     {{"item_id", item_id_},
                      {"output_index", index_},
                      {"summary_index", 0},
                      {"part", json::object{{"type", "summary_text"}, {"text", reasoning_}}}});
        item = responses::reasoning_item(item_id_, reasoning_, true);
        break;
      case Item::Message:
        out += event("response.output_text.done",
                     {{"item_id", item_id_}, {"output_index", index_}, {"content_index", 0}, {"text", text_}});
        out +=
            event("response.content_part.done",
                  {{"item_id", item_id_},
                   {"output_index", index_},
                   {"content_index", 0},
                   {"part", json::object{{"type", "output_text"}, {"text", text_}, {"annotations", json::array{}}}}});
        item = responses::message_item(item_id_, text_, true);
        break;
      case Item::Call:
        out += event("response.function_call_arguments.done",
                     {{"item_id", item_id_}, {"output_index", index_}, {"arguments", arguments_}});
        item = responses::function_call_item(item_id_, call_id_, call_name_, arguments_, true);
        arguments_.clear();
        break;
    }
    out += event("response.output_item.done", {{"output_index", index_}, {"item", item}});
    output_.push_back(std::move(item));
    ++index_;
    current_ = Item::None;
  }

  // The conversation this response ends, for a later previous_response_id.
  void remember(const TurnOutcome& o) {
    if (!history_ || !o.message || status_of(o) == responses::Status::Failed) return;
    protocol::Message turn;
    turn.role = protocol::Role::Assistant;
    turn.content = o.message->content;
    turn.reasoning = o.message->reasoning;
    for (const auto& c : o.message->calls)
      if (c.closed) turn.tool_calls.push_back({c.id, c.name, c.arguments_json});
    std::vector<protocol::Message> conversation = conversation_;
    conversation.push_back(std::move(turn));
    history_->remember(meta_.id, std::move(conversation));
  }

  responses::ResponseMeta meta_;
  std::shared_ptr<ResponseHistory> history_;
  std::vector<protocol::Message> conversation_;
  uint64_t sequence_ = 0;
  bool logprobs_;
  Item current_ = Item::None;
  size_t index_ = 0;
  std::string item_id_, call_id_, call_name_, arguments_, reasoning_, text_;
  json::array output_;
};

}  // namespace

void add_responses_endpoint(Router& router, EndpointEnv env) {
  protocol::ContractMode mode = contract_mode_of(env.config);
  auto history = std::make_shared<ResponseHistory>(size_t{64} << 20, env.config.response_dir);
  router.add("POST", "/v1/responses", [env, mode, history](RequestContext& ctx) {
    protocol::ResponsesRequest request;
    try {
      request = protocol::parse_responses_request(parse_json_body(ctx.request));
    } catch (const protocol::RequestError& e) {
      return request_error_reply(e);
    }
    for (const auto& t : request.ignored_tools)
      spdlog::debug("responses: tool '{}' is not a function tool; left out of the tools block", t);
    for (const auto& t : request.ignored_items) spdlog::debug("responses: input item '{}' ignored", t);

    protocol::ChatRequest& chat = request.chat;
    size_t first_input = request.has_instructions ? 1 : 0;
    if (request.previous_response_id) {
      auto earlier = history->find(*request.previous_response_id);
      if (!earlier)
        return error_reply(
            ApiStyle::OpenAI, 400,
            "previous_response_id '" + *request.previous_response_id +
                (history->persistent() ? "' is not known to this server (it was never issued here, or it was evicted "
                                         "from the stored responses)"
                                       : "' is not known to this server (it was never issued here, was evicted, or "
                                         "the server restarted: without cache.dir responses are kept in memory only)") +
                "; resend the full conversation in 'input' without previous_response_id",
            "previous_response_id", "previous_response_not_found");
      chat.messages.insert(chat.messages.begin() + static_cast<long>(first_input), earlier->begin(), earlier->end());
      request.message_paths.insert(request.message_paths.begin() + static_cast<long>(first_input), earlier->size(),
                                   "previous_response_id");
    }
    std::vector<protocol::Message> conversation(chat.messages.begin() + static_cast<long>(first_input),
                                                chat.messages.end());

    ChatTurnSpec spec{ApiStyle::OpenAI, "input", request.message_paths};
    auto prepared = prepare_chat_turn(env, mode, ctx, chat, spec);
    if (auto* reply = std::get_if<Reply>(&prepared)) return std::move(*reply);
    ChatTurn& turn = std::get<ChatTurn>(prepared);

    responses::ResponseMeta meta{new_response_id("resp_"), unix_now(), turn.model, request.previous_response_id};
    TurnOptions options = chat_turn_options(env, turn, chat.stream, meta.id);
    auto stream = std::make_shared<TurnStream>(
        std::make_unique<ResponsesFormat>(std::move(meta), history, std::move(conversation), chat.output.logprobs),
        options);
    return submit_turn(env.service, ctx, std::move(turn.job), std::move(stream), ApiStyle::OpenAI);
  });
}

}  // namespace ds4::http
