// DSML: the markup DeepSeek V4 uses for tool calls, and its canonical rendering (exactly ds4's
// escaping; parameters in the key order of the client's arguments object, non-object arguments as
// one string parameter named "arguments"). The markup and its escaping:
// docs/chat-format.md §dsml-tool-calls, §escaping.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/protocol/chat_request.hpp"

namespace ds4::protocol::dsml {

inline constexpr std::string_view kBar = "｜";  // U+FF5C, 3 bytes
inline constexpr std::string_view kToolCallsOpen = "<｜DSML｜tool_calls>";
inline constexpr std::string_view kToolCallsClose = "</｜DSML｜tool_calls>";
inline constexpr std::string_view kParameterClose = "</｜DSML｜parameter>";
inline constexpr std::string_view kToolResultClose = "</tool_result>";

// The three spellings the model may use: full DSML, DSML with the first bar dropped, plain XML.
enum class Style { Full, Short, Plain };
struct StyleTags {
  std::string_view tool_calls_open, tool_calls_close, invoke_open, invoke_close, param_open, param_close;
};
const StyleTags& tags(Style style);

std::string escape_attribute(std::string_view text);
std::string escape_string_value(std::string_view text);  // </｜DSML｜parameter> -> &lt;/…
std::string escape_json_value(std::string_view json);    // </｜DSML｜parameter> -> \u003c/…
std::string unescape_entities(std::string_view text);    // &amp; &lt; &gt; &quot; &apos;
std::string escape_tool_result(std::string_view text);   // </tool_result> -> &lt;/tool_result>
// Whitespace outside JSON strings removed; input is not validated (ds4 semantics).
std::string minify_json(std::string_view json);

// Canonical block for the calls, appended to `out`. When `value_spans` is given, the byte
// ranges (offsets into `out`) of every parameter value and of raw-arguments text are appended;
// when `name_spans` is given, those of every tool name and parameter key (client text too).
void render_tool_calls(const std::vector<ToolCall>& calls, std::string& out,
                       std::vector<std::pair<size_t, size_t>>* value_spans = nullptr,
                       std::vector<std::pair<size_t, size_t>>* name_spans = nullptr);

// Byte ranges of parameter values inside an already rendered (e.g. replayed) block, relative
// to the block start. Best effort over any of the three styles.
std::vector<std::pair<size_t, size_t>> parameter_value_spans(std::string_view block);

}  // namespace ds4::protocol::dsml
