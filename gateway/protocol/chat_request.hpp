// Chat and completion requests, parsed from OpenAI-shaped JSON into plain structs.
//
// The parser is strict about types (a wrong type is a RequestError naming the JSON path) and
// lenient about unknown keys (skipped, as OpenAI clients send many we do not use). Semantics:
//  * content: string, null, or an array of parts; string parts and {"type":"text","text":...}
//    parts are concatenated with no separator (as ds4 does). Other part types (images, audio)
//    are rejected: the model reads text only, and silently dropping them would change meaning.
//  * roles: system, developer -> System/Developer (both hoisted into the system prompt);
//    user; assistant; tool and the legacy function -> Tool.
//  * assistant reasoning: `reasoning_content` or `reasoning` (reasoning_content wins if both).
//  * tool_calls[i]: id, function.name, function.arguments (a JSON string kept verbatim, or any
//    other JSON value kept as its serialization).
//  * tools[i]: {"type":"function","function":{...}} is unwrapped to the inner object; a bare
//    {"name":...} object is taken as is. tool_choice: "none" | "auto" | "required" kept as the
//    string; a forced {"type":"function","function":{"name":N}} is kept as "function:N". Only
//    "none" changes rendering (tools are then not rendered), exactly as in ds4; "required" and
//    "function:N" are enforced on the sampled tokens (serving/dsml_token_policy.hpp).
//  * max_tokens / max_completion_tokens (the latter wins when both are present).
//  * Thinking mapping (same as ds4-server):
//      reasoning_effort: "none" -> Off; "minimal","low","medium","high","xhigh" -> High;
//                        "max" -> Max; null -> no opinion; anything else -> RequestError.
//      thinking: true/false or {"type":"enabled"|"disabled"}; think: true/false (ds4 alias).
//      Result: Off if the switch is off or effort is "none"; else Max if effort is "max";
//      else High. Without an explicit switch, model "deepseek-chat" means Off and
//      "deepseek-reasoner" means on. Default High. Max needs a context of at least 393216
//      tokens; the renderer downgrades it (see chat_render.hpp effective_thinking()).
//  * n other than 1 is rejected (one choice per request).
//  * response_format, logit_bias, logprobs, top_logprobs: output_controls.hpp.
//  * tools[i].function.parameters, when present, must be a JSON schema object (as on the
//    Messages and Responses APIs).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gateway/protocol/output_controls.hpp"
#include "gateway/protocol/request_error.hpp"

namespace ds4::protocol {

enum class Role { System, Developer, User, Assistant, Tool };

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text as the client sent it
};

struct Message {
  Role role = Role::User;
  std::string content;
  std::optional<std::string> reasoning;  // from reasoning_content or reasoning
  std::vector<ToolCall> tool_calls;      // assistant only
  std::string tool_call_id;              // tool only
};

enum class Thinking { Off, High, Max };

struct SamplingParams {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<uint32_t> top_k;
  std::optional<double> min_p;
  std::optional<uint64_t> seed;
  // ds4d's "speculation": false opts the request out of speculative decoding (same output).
  std::optional<bool> speculation;
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;
  std::vector<boost::json::object> tools;  // inner function objects
  // Tools the conversation loaded part-way (Anthropic's deferred tools, named by a tool_result's
  // tool_reference block). Their schemas are rendered inside that tool result, not in the tools
  // block, so everything before it renders byte for byte as in the request that loaded them.
  // Callable like `tools`; each name once.
  std::vector<boost::json::object> loaded_tools;
  std::string tool_choice = "auto";
  Thinking thinking = Thinking::High;
  SamplingParams sampling;
  std::optional<uint32_t> max_tokens;
  std::vector<std::string> stop;  // non-empty strings only
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // The client's conversation key (prompt_cache_key; on /v1/messages the
  // X-Claude-Code-Session-Id header): routes restore points to its session, never decides
  // which prefix is reused. Empty: none.
  std::string session_hint;
  OutputControls output;  // response_format / text.format, logit_bias, logprobs

  // Tools are rendered (and DSML expected) only when some are given and choice is not "none".
  bool tools_active() const { return (!tools.empty() || !loaded_tools.empty()) && tool_choice != "none"; }
  // The tools a call may name: `tools`, then `loaded_tools`. Returns a copy.
  std::vector<boost::json::object> callable_tools() const;
};

// Throws RequestError.
ChatRequest parse_chat_request(const boost::json::value& body);

// /v1/completions. `prompt` is a string (or an array holding one string), or an array of token
// ids (or an array holding one such array). Unless `raw` (our extension) is true, the prompt
// is wrapped in ds4's completion frame (see chat_render.hpp completion_frame()); with raw, no
// protocol tokens at all are added.
struct CompletionRequest {
  std::string model;
  std::variant<std::string, std::vector<int32_t>> prompt;
  bool raw = false;
  Thinking thinking = Thinking::High;
  SamplingParams sampling;
  std::optional<uint32_t> max_tokens;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;
  OutputControls output;  // logit_bias, logprobs (never a JSON format)
};

// Throws RequestError.
CompletionRequest parse_completion_request(const boost::json::value& body);

const char* role_name(Role role);
const char* thinking_name(Thinking thinking);

}  // namespace ds4::protocol
