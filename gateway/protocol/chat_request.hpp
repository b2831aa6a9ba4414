// Chat and completion requests, parsed from OpenAI-shaped JSON into plain structs.
//
// The parser is strict about types (a wrong type is a RequestError naming the JSON path) and
// lenient about unknown keys (skipped). How each field maps (content parts, roles, reasoning,
// tools and tool_choice, the thinking switch and effort, what is refused):
// docs/api.md §openai-chat-requests.
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
