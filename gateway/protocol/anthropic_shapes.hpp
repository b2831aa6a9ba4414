// Builders for the Anthropic Messages response JSON, as pure functions of plain structs.
//
// sse_event() writes "event: NAME\ndata: JSON\n\n"; the payload builders below follow the
// documented stream lifecycle. The shapes, stop reasons and usage:
// docs/api.md §anthropic-response-shapes.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/openai_shapes.hpp"

namespace ds4::protocol::anthropic {

enum class StopReason { EndTurn, MaxTokens, StopSequence, ToolUse };
const char* stop_reason_name(StopReason reason);  // "end_turn", ...

struct ToolUse {
  std::string id;
  std::string name;
  std::string arguments_json;  // parsed into `input`; not an object -> {}
};

struct MessageOutput {
  std::optional<std::string> thinking;
  std::string signature;  // sent with the thinking block
  std::string text;
  std::vector<ToolUse> tool_uses;
};

boost::json::object usage_json(const openai::Usage& usage);
// Start-of-stream usage: output 0.
boost::json::object message_json(std::string_view id, std::string_view model, const MessageOutput& output,
                                 StopReason stop, const openai::Usage& usage,
                                 const openai::Ds4dExtension* extension = nullptr);
boost::json::object tool_input(std::string_view arguments_json);

std::string sse_event(std::string_view name, const boost::json::object& payload);

boost::json::object message_start(std::string_view id, std::string_view model, const openai::Usage& usage);
boost::json::object block_start_thinking(size_t index);
boost::json::object block_start_text(size_t index);
boost::json::object block_start_tool_use(size_t index, std::string_view id, std::string_view name);
// delta_type: thinking_delta (field "thinking"), text_delta ("text"), input_json_delta
// ("partial_json"), signature_delta ("signature").
boost::json::object block_delta(size_t index, std::string_view delta_type, std::string_view text);
boost::json::object block_stop(size_t index);
boost::json::object message_delta(StopReason stop, const openai::Usage& usage,
                                  const openai::Ds4dExtension* extension = nullptr);
boost::json::object message_stop();
boost::json::object ping();
boost::json::object stream_error(std::string_view type, std::string_view message);

}  // namespace ds4::protocol::anthropic
