// ParsedMessage: what one generated assistant turn turned out to be, once the output parser has
// seen all of it. The non-streaming response is built from it, and so is the turn's contract
// (contract_store.hpp), which is why it carries the exact sampled bytes next to the
// client-facing view.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ds4::protocol {

struct ParsedToolCall {
  std::string id;  // call_ + 32 hex, issued by the parser
  std::string name;
  std::string arguments_json;   // deterministic compact JSON built from the DSML parameters
  bool arguments_valid = true;  // false when a string="false" value was not valid JSON
  std::string exact_dsml;       // the sampled <invoke ...>...</invoke> element, byte for byte
  bool closed = false;          // its </invoke> arrived; an unclosed call (output cut) is never run
};

enum class ToolCallsStatus {
  None,          // no tool-call block was started
  Complete,      // a block was opened and closed; `calls` and `dsml_block` are valid
  Malformed,     // a block started but was not well formed; its bytes went out as content
  Unterminated,  // output ended inside a block: finish "length" when max_tokens cut it (the
                 // unclosed call is left out), "error" when the model itself stopped there
};

struct ParsedMessage {
  std::optional<std::string> reasoning;  // exact reasoning bytes; nullopt when none was produced
  bool thinking_closed = false;          // "</think>" was generated
  std::string content;                   // client-visible content (trailing whitespace before
                                         // a tool-call block is protocol and trimmed)
  std::vector<ParsedToolCall> calls;
  std::string dsml_block;  // exact sampled block incl. all whitespace before it
  ToolCallsStatus status = ToolCallsStatus::None;
};

}  // namespace ds4::protocol
