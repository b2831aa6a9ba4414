// OpenAI Responses JSON builders. See responses_shapes.hpp.
#include "gateway/protocol/responses_shapes.hpp"

#include <boost/json/serialize.hpp>

#include "gateway/protocol/reasoning_token.hpp"

namespace ds4::protocol::responses {

namespace json = boost::json;

const char* status_name(Status status) {
  switch (status) {
    case Status::InProgress: return "in_progress";
    case Status::Completed: return "completed";
    case Status::Incomplete: return "incomplete";
    case Status::Failed: return "failed";
  }
  return "completed";
}

json::object usage_json(const openai::Usage& usage) {
  json::object o;
  o["input_tokens"] = usage.prompt_tokens;
  o["input_tokens_details"] = json::object{{"cached_tokens", usage.cached_tokens}};
  o["output_tokens"] = usage.completion_tokens;
  o["output_tokens_details"] = json::object{{"reasoning_tokens", 0}};
  o["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  o["protocol_tokens"] = usage.protocol_tokens;
  return o;
}

json::object reasoning_item(std::string_view id, std::string_view reasoning, bool done) {
  json::object o{{"id", id}, {"type", "reasoning"}};
  json::array summary;
  if (done) summary.push_back(json::object{{"type", "summary_text"}, {"text", reasoning}});
  o["summary"] = std::move(summary);
  if (done) o["encrypted_content"] = encode_reasoning_token(reasoning);
  return o;
}

json::object message_item(std::string_view id, std::string_view text, bool done) {
  json::array content;
  if (done) content.push_back(json::object{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}});
  return json::object{{"id", id},
                      {"type", "message"},
                      {"status", done ? "completed" : "in_progress"},
                      {"role", "assistant"},
                      {"content", std::move(content)}};
}

json::object function_call_item(std::string_view id, std::string_view call_id, std::string_view name,
                                std::string_view arguments, bool done) {
  return json::object{{"id", id},     {"type", "function_call"}, {"status", done ? "completed" : "in_progress"},
                      {"name", name}, {"call_id", call_id},      {"arguments", arguments}};
}

json::object response_json(const ResponseMeta& meta, Status status, json::array output, const openai::Usage* usage,
                           const std::string& error_message, const openai::Ds4dExtension* extension) {
  json::object o;
  o["id"] = meta.id;
  o["object"] = "response";
  o["created_at"] = meta.created_at;
  o["status"] = status_name(status);
  o["model"] = meta.model;
  o["output"] = std::move(output);
  o["error"] = status == Status::Failed
                   ? json::value(json::object{{"code", "server_error"}, {"message", error_message}})
                   : json::value(nullptr);
  o["incomplete_details"] =
      status == Status::Incomplete ? json::value(json::object{{"reason", "max_output_tokens"}}) : json::value(nullptr);
  o["previous_response_id"] =
      meta.previous_response_id ? json::value(*meta.previous_response_id) : json::value(nullptr);
  o["parallel_tool_calls"] = true;
  o["tool_choice"] = "auto";
  o["tools"] = json::array{};
  if (usage) o["usage"] = responses::usage_json(*usage);
  if (extension) o["ds4d"] = openai::ds4d_json(*extension);
  return o;
}

std::string sse_event(std::string_view type, uint64_t sequence_number, const json::object& fields) {
  json::object payload{{"type", type}, {"sequence_number", sequence_number}};
  for (const auto& [k, v] : fields) payload[k] = v;
  std::string out = "event: ";
  out += type;
  out += "\ndata: ";
  out += json::serialize(payload);
  out += "\n\n";
  return out;
}

}  // namespace ds4::protocol::responses
