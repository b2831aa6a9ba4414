// OutputParser: turns the model's sampled text, as it streams, into OpenAI-shaped events.
//
// Input is valid UTF-8 text (put the token bytes through Utf8Assembler first); feeding it one byte
// at a time yields the same text and events as feeding it whole. Reasoning, content and block
// phases, how arguments JSON is built, malformed and unterminated blocks, and where we differ from
// ds4: docs/chat-format.md §parsing-sampled-output, §the-streaming-parser.
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
