// Anthropic Messages response JSON builders. See anthropic_shapes.hpp.
#include "gateway/protocol/anthropic_shapes.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace ds4::protocol::anthropic {

namespace json = boost::json;

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::EndTurn: return "end_turn";
    case StopReason::MaxTokens: return "max_tokens";
    case StopReason::StopSequence: return "stop_sequence";
    case StopReason::ToolUse: return "tool_use";
  }
  return "end_turn";
}

json::object usage_json(const openai::Usage& usage) {
  json::object o;
  uint64_t cached = std::min(usage.cached_tokens, usage.prompt_tokens);
  o["input_tokens"] = usage.prompt_tokens - cached;
  o["output_tokens"] = usage.completion_tokens;
  o["cache_read_input_tokens"] = cached;
  o["cache_creation_input_tokens"] = 0;
  return o;
}

json::object tool_input(std::string_view arguments_json) {
  boost::system::error_code ec;
  json::value v = json::parse(arguments_json, ec);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

json::object message_json(std::string_view id, std::string_view model, const MessageOutput& output, StopReason stop,
                          const openai::Usage& usage, const openai::Ds4dExtension* extension) {
  json::array content;
  if (output.thinking)
    content.push_back(
        json::object{{"type", "thinking"}, {"thinking", *output.thinking}, {"signature", output.signature}});
  if (!output.text.empty() || output.tool_uses.empty())
    content.push_back(json::object{{"type", "text"}, {"text", output.text}});
  for (const auto& t : output.tool_uses)
    content.push_back(
        json::object{{"type", "tool_use"}, {"id", t.id}, {"name", t.name}, {"input", tool_input(t.arguments_json)}});
  json::object o;
  o["id"] = id;
  o["type"] = "message";
  o["role"] = "assistant";
  o["model"] = model;
  o["content"] = std::move(content);
  o["stop_reason"] = stop_reason_name(stop);
  o["stop_sequence"] = nullptr;
  o["usage"] = anthropic::usage_json(usage);
  if (extension) o["ds4d"] = openai::ds4d_json(*extension);
  return o;
}

std::string sse_event(std::string_view name, const json::object& payload) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: ";
  out += json::serialize(payload);
  out += "\n\n";
  return out;
}

json::object message_start(std::string_view id, std::string_view model, const openai::Usage& usage) {
  json::object message;
  message["id"] = id;
  message["type"] = "message";
  message["role"] = "assistant";
  message["model"] = model;
  message["content"] = json::array{};
  message["stop_reason"] = nullptr;
  message["stop_sequence"] = nullptr;
  openai::Usage start = usage;
  start.completion_tokens = 0;
  message["usage"] = anthropic::usage_json(start);
  return json::object{{"type", "message_start"}, {"message", std::move(message)}};
}

static json::object block_start(size_t index, json::object block) {
  return json::object{{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(block)}};
}

json::object block_start_thinking(size_t index) {
  return block_start(index, json::object{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
}

json::object block_start_text(size_t index) { return block_start(index, json::object{{"type", "text"}, {"text", ""}}); }

json::object block_start_tool_use(size_t index, std::string_view id, std::string_view name) {
  return block_start(index, json::object{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", json::object{}}});
}

json::object block_delta(size_t index, std::string_view delta_type, std::string_view text) {
  std::string_view field = delta_type == "thinking_delta"     ? "thinking"
                           : delta_type == "input_json_delta" ? "partial_json"
                           : delta_type == "signature_delta"  ? "signature"
                                                              : "text";
  json::object delta{{"type", delta_type}};
  delta[field] = text;
  return json::object{{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}};
}

json::object block_stop(size_t index) { return json::object{{"type", "content_block_stop"}, {"index", index}}; }

json::object message_delta(StopReason stop, const openai::Usage& usage, const openai::Ds4dExtension* extension) {
  json::object o{{"type", "message_delta"},
                 {"delta", json::object{{"stop_reason", stop_reason_name(stop)}, {"stop_sequence", nullptr}}},
                 {"usage", anthropic::usage_json(usage)}};
  if (extension) o["ds4d"] = openai::ds4d_json(*extension);
  return o;
}

json::object message_stop() { return json::object{{"type", "message_stop"}}; }
json::object ping() { return json::object{{"type", "ping"}}; }

json::object stream_error(std::string_view type, std::string_view message) {
  return json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}};
}

}  // namespace ds4::protocol::anthropic
