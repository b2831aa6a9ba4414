// OutputParser: turns the model's sampled text, as it streams, into OpenAI-shaped events.
//
// Input is valid UTF-8 text (put the token bytes through Utf8Assembler first). The parser is
// streaming-safe: feeding the text one byte at a time yields the same concatenated reasoning,
// content and argument text and the same structural events as feeding it whole.
//
// Phases:
//  * reasoning: when the prompt ended with "<think>" (thinking_started), or the output itself
//    starts with "<think>", text up to the first "</think>" is ReasoningDelta. DSML in
//    reasoning is never a tool call (ds4 037ee39).
//  * content: ContentDelta, except that bytes which could begin a tool-call block (a prefix of
//    "<｜DSML｜tool_calls>", "<DSML｜tool_calls>" or "<tool_calls>") and trailing whitespace are
//    held back: the whitespace before a block is protocol, not content.
//  * block: ToolCallBegin as soon as an invoke tag is complete (id issued then), argument JSON
//    fragments while parameters arrive (string="true" or missing: entities unescaped and
//    JSON-escaped as a string; string="false": minified JSON bytes; a parameter with no string
//    attribute whose value is more parameters becomes a JSON object of them, ds4's "loose nested"
//    recovery), ToolCallEnd at </invoke>, ToolCallsDone at the block's close tag with the exact
//    sampled block bytes (including all whitespace between the content and the block, so that
//    content + block is exactly what was sampled; ds4 keeps only a "\n\n"). Text after the
//    block is ignored (the server stops decoding there).
// Arguments JSON is built deterministically: {"k":v,...} in DSML order, no spaces; the
// fragments of one call concatenate to exactly ToolCallEnd::arguments_json.
// Malformed block: ToolCallsError{Malformed} with the raw bytes from the block start (the server
// sends them as content, as ds4 does) and the parser continues in content mode without DSML
// detection. End inside a block: ToolCallsError{Unterminated} from finish().
// Differences from ds4's whole-text parser: the first block start in the text wins (ds4 prefers
// the full DSML spelling anywhere over the others), and reasoning ends at the first </think>.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/protocol/parsed_message.hpp"
#include "gateway/protocol/tool_call_id.hpp"

namespace ds4::protocol {

struct ReasoningDelta {
  std::string text;
};
struct ContentDelta {
  std::string text;
};
struct ToolCallBegin {
  size_t index;
  std::string id;
  std::string name;
};
struct ToolCallArgumentsDelta {
  size_t index;
  std::string fragment;
};
struct ToolCallEnd {
  size_t index;
  std::string arguments_json;
  std::string exact_dsml_block_bytes;  // this call's sampled <invoke>…</invoke> bytes
  bool arguments_valid = true;
};
struct ToolCallsDone {
  std::string exact_dsml_block;
};  // the whole sampled block
struct ToolCallsError {
  ToolCallsStatus status;  // Malformed or Unterminated
  std::string raw_text;    // block bytes (from its start) not delivered as content
  std::string detail;
};

using Event = std::variant<ReasoningDelta, ContentDelta, ToolCallBegin, ToolCallArgumentsDelta, ToolCallEnd,
                           ToolCallsDone, ToolCallsError>;

class OutputParser {
 public:
  // `tool_calls` false (the request has no active tools): no block is ever detected; text that
  // looks like DSML is content like any other.
  explicit OutputParser(bool thinking_started /*prompt ended with <think>*/,
                        ToolCallIdGenerator make_id = new_tool_call_id, bool tool_calls = true);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  std::vector<Event> feed(std::string_view text_delta);
  std::vector<Event> finish();  // flushes held bytes; call once at the end

  bool in_tool_calls() const;            // a block has started and is not finished
  bool tool_calls_done() const;          // the block closed: the server should stop decoding
  const ParsedMessage& message() const;  // everything so far; complete after finish()

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ds4::protocol
