// OpenAI response JSON builders (see openai_shapes.hpp for the shapes). Key order follows the
// OpenAI documentation so responses diff cleanly against the reference API.
#include "gateway/protocol/openai_shapes.hpp"

#include <boost/json/serialize.hpp>

namespace ds4::protocol::openai {

namespace json = boost::json;

namespace {

json::object envelope(const ResponseMeta& meta, std::string_view object) {
  json::object o;
  o["id"] = meta.id;
  o["object"] = object;
  o["created"] = meta.created;
  o["model"] = meta.model;
  return o;
}

json::object chunk(const ResponseMeta& meta, json::object delta, const json::value& finish = nullptr) {
  json::object o = envelope(meta, "chat.completion.chunk");
  json::object choice;
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish;
  o["choices"] = json::array{std::move(choice)};
  return o;
}

json::object violation_json(const ContractViolation& v) {
  json::object o;
  o["message_index"] = v.message_index;
  o["kind"] = violation_kind_name(v.kind);
  o["detail"] = v.detail;
  o["fix_hint"] = v.fix_hint;
  return o;
}

}  // namespace

json::object usage_json(const Usage& usage) {
  json::object o;
  o["prompt_tokens"] = usage.prompt_tokens;
  o["completion_tokens"] = usage.completion_tokens;
  o["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  o["prompt_tokens_details"] = json::object{{"cached_tokens", usage.cached_tokens}};
  o["protocol_tokens"] = usage.protocol_tokens;
  return o;
}

json::object ds4d_json(const Ds4dExtension& extension) {
  json::object o;
  if (extension.contract) {
    const ContractReport& c = *extension.contract;
    json::array violations;
    for (const auto& v : c.violations) violations.push_back(violation_json(v));
    json::object contract;
    contract["mode"] = contract_mode_name(c.mode);
    contract["ok"] = c.violations.empty();
    contract["violations"] = std::move(violations);
    contract["replayed_blocks"] = c.replayed_blocks;
    contract["canonical_blocks"] = c.canonical_blocks;
    contract["repaired_reasoning"] = c.repaired_reasoning;
    o["contract"] = std::move(contract);
  }
  if (extension.cache) {
    o["cache"] = json::object{{"source", extension.cache->source},
                              {"cached_tokens", extension.cache->cached_tokens},
                              {"prompt_tokens", extension.cache->prompt_tokens}};
  }
  if (extension.speculation) {
    o["speculation"] = json::object{{"drafted_tokens", extension.speculation->drafted_tokens},
                                    {"accepted_tokens", extension.speculation->accepted_tokens}};
  }
  return o;
}

json::object chat_completion(const ResponseMeta& meta, const AssistantOutput& output, std::string_view finish_reason,
                             const Usage& usage, const Ds4dExtension* extension) {
  json::object o = envelope(meta, "chat.completion");
  json::object message;
  message["role"] = "assistant";
  message["content"] = output.content;
  if (output.reasoning) message["reasoning_content"] = *output.reasoning;
  if (!output.tool_calls.empty()) {
    json::array calls;
    for (const auto& c : output.tool_calls) {
      calls.push_back(json::object{{"id", c.id},
                                   {"type", "function"},
                                   {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  json::object choice;
  choice["index"] = 0;
  choice["message"] = std::move(message);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  o["choices"] = json::array{std::move(choice)};
  o["usage"] = usage_json(usage);
  if (extension) o["ds4d"] = ds4d_json(*extension);
  return o;
}

json::object chat_chunk_role(const ResponseMeta& meta) {
  return chunk(meta, json::object{{"role", "assistant"}, {"content", ""}});
}

json::object chat_chunk_content(const ResponseMeta& meta, std::string_view text) {
  return chunk(meta, json::object{{"content", text}});
}

json::object chat_chunk_reasoning(const ResponseMeta& meta, std::string_view text) {
  return chunk(meta, json::object{{"reasoning_content", text}});
}

json::object chat_chunk_tool_call_begin(const ResponseMeta& meta, size_t index, std::string_view id,
                                        std::string_view name) {
  json::object call{{"index", index},
                    {"id", id},
                    {"type", "function"},
                    {"function", json::object{{"name", name}, {"arguments", ""}}}};
  return chunk(meta, json::object{{"tool_calls", json::array{std::move(call)}}});
}

json::object chat_chunk_tool_call_arguments(const ResponseMeta& meta, size_t index, std::string_view fragment) {
  json::object call{{"index", index}, {"function", json::object{{"arguments", fragment}}}};
  return chunk(meta, json::object{{"tool_calls", json::array{std::move(call)}}});
}

json::object chat_chunk_finish(const ResponseMeta& meta, std::string_view finish_reason,
                               const Ds4dExtension* extension) {
  json::object o = chunk(meta, json::object{}, json::value(finish_reason));
  if (extension) o["ds4d"] = ds4d_json(*extension);
  return o;
}

json::object chat_chunk_usage(const ResponseMeta& meta, const Usage& usage) {
  json::object o = envelope(meta, "chat.completion.chunk");
  o["choices"] = json::array{};
  o["usage"] = usage_json(usage);
  return o;
}

json::object text_completion(const ResponseMeta& meta, std::string_view text, std::string_view finish_reason,
                             const Usage& usage, const Ds4dExtension* extension) {
  json::object o = envelope(meta, "text_completion");
  json::object choice{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  o["choices"] = json::array{std::move(choice)};
  o["usage"] = usage_json(usage);
  if (extension) o["ds4d"] = ds4d_json(*extension);
  return o;
}

json::object text_completion_chunk(const ResponseMeta& meta, std::string_view text,
                                   std::optional<std::string_view> finish_reason) {
  json::object o = envelope(meta, "text_completion");
  json::object choice{{"text", text}, {"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish_reason ? json::value(*finish_reason) : json::value(nullptr);
  o["choices"] = json::array{std::move(choice)};
  return o;
}

json::object text_completion_usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  json::object o = envelope(meta, "text_completion");
  o["choices"] = json::array{};
  o["usage"] = usage_json(usage);
  return o;
}

json::object error_body(std::string_view message, std::string_view type, std::optional<std::string_view> param,
                        std::optional<std::string_view> code) {
  json::object e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param ? json::value(*param) : json::value(nullptr);
  e["code"] = code ? json::value(*code) : json::value(nullptr);
  return json::object{{"error", std::move(e)}};
}

json::object request_error_body(const RequestError& error) {
  return error_body(error.message, "invalid_request_error",
                    error.param.empty() ? std::nullopt : std::optional<std::string_view>(error.param));
}

json::object contract_violation_body(const std::vector<ContractViolation>& violations,
                                     const std::vector<std::string>& message_paths) {
  auto path_of = [&](size_t index) {
    if (index < message_paths.size()) return message_paths[index];
    return "messages[" + std::to_string(index) + "]";
  };
  std::string message = "the conversation breaks the replay contract of turns this server generated";
  std::optional<std::string> param;
  for (const auto& v : violations) {
    message += "; " + path_of(v.message_index) + ": " + violation_kind_name(v.kind) + " (" + v.detail +
               "). Fix: " + v.fix_hint;
    if (!param) param = path_of(v.message_index);
  }
  json::object body = error_body(message, "invalid_request_error",
                                 param ? std::optional<std::string_view>(*param) : std::nullopt, "contract_violation");
  json::array list;
  for (const auto& v : violations) list.push_back(violation_json(v));
  body["error"].as_object()["violations"] = std::move(list);
  return body;
}

json::object context_length_body(uint64_t prompt_tokens, uint64_t context_tokens, std::string_view param) {
  json::object body =
      error_body("Prompt has " + std::to_string(prompt_tokens) + " tokens, but the configured context size is " +
                     std::to_string(context_tokens) + " tokens",
                 "invalid_request_error", param, "context_length_exceeded");
  body["error"].as_object()["n_prompt_tokens"] = prompt_tokens;
  body["error"].as_object()["n_ctx"] = context_tokens;
  return body;
}

std::string sse_data(const json::object& payload) {
  std::string out = "data: ";
  out += json::serialize(payload);
  out += "\n\n";
  return out;
}

}  // namespace ds4::protocol::openai
