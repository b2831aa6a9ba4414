#pragma once
// TurnStream: the one generation sink every model endpoint uses, and TurnFormat, the only part
// that differs between the APIs (so SSE heads, keep-alives, parsing, contract recording, usage and
// the ds4d object are written once for all four).
//
// Invariants: the head goes out exactly once and before any body byte; open() comes before any
// events()/text() bytes; exactly one of close(), whole() and error() is called. Why one sink, the
// keep-alives while queued or prefilling, and the call sequence on the engine worker:
// docs/api.md §the-turn-stream.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/api/generation_support.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/openai_shapes.hpp"
#include "gateway/protocol/utf8_assembler.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/transport/response_channel.hpp"

namespace ds4::serving {
class Service;
}

namespace ds4::http {

// Everything a format needs to write the end of a turn.
struct TurnOutcome {
  const serving::GenerationResult& result;
  const protocol::ParsedMessage* message = nullptr;  // chat mode; null in text mode
  std::string_view text;                             // text mode: all generated text
  ClientFinish finish = ClientFinish::Stop;
  protocol::openai::Usage usage;
  protocol::openai::Ds4dExtension ds4d;
};

class TurnFormat {
 public:
  virtual ~TurnFormat() = default;
  // The first body bytes of a stream, once the prompt is in the context.
  virtual std::string open(const serving::GenerationUsage& usage) = 0;
  // Chat mode: parser events as stream bytes (may be empty).
  virtual std::string events(const std::vector<protocol::Event>& events) = 0;
  // Text mode: generated text as stream bytes.
  virtual std::string text(std::string_view) { return {}; }
  // The last bytes of a stream.
  virtual std::string close(const TurnOutcome& outcome) = 0;
  // The whole non-streamed response.
  virtual ResponseHead whole(const TurnOutcome& outcome) = 0;
  // An error answered instead of a response (nothing was sent yet), in the API's error shape.
  virtual ResponseHead error(unsigned status, const std::string& message) = 0;
};

struct TurnOptions {
  bool stream = false;
  bool parse_chat = true;         // false: text mode (/v1/completions)
  bool thinking_started = false;  // the prompt ended with <think>
  bool tool_calls = true;         // chat mode: false when the turn has no active tools (all content)
  // Chat mode: record the finished turn in the service's contract store under this anchor.
  serving::Service* contracts_of = nullptr;
  uint64_t turn_anchor = 0;
  std::optional<protocol::openai::ContractReport> contract;
  size_t protocol_tokens = 0;
  std::string label;  // for logs: the response id
  // The request set an output limit (max_tokens & co.). Without one, reaching the end of the
  // context is a normal end, not a length stop (docs/api.md §output-limits).
  bool client_limited = true;
};

class TurnStream final : public serving::GenerationSink {
 public:
  TurnStream(std::unique_ptr<TurnFormat> format, TurnOptions options);

  // Before submitting: where the response goes.
  void attach(std::weak_ptr<ResponseChannel> channel) { channel_ = std::move(channel); }

  void on_queued(size_t position) override;
  void on_prefill_progress(size_t done, size_t total) override;
  void on_prefilled(const serving::GenerationUsage& usage) override;
  bool on_text(std::string_view bytes) override;
  void on_finished(const serving::GenerationResult& result) override;

 private:
  void send_head();
  void keep_alive(std::string_view sse_comment);
  void answer(ResponseChannel& channel, ResponseHead head);
  void open(const serving::GenerationUsage& usage);
  void deliver(std::string_view text);
  void handle(const std::vector<protocol::Event>& events);
  void send(std::string bytes);

  std::unique_ptr<TurnFormat> format_;
  TurnOptions options_;
  std::weak_ptr<ResponseChannel> channel_;
  protocol::Utf8Assembler assembler_;
  std::optional<protocol::OutputParser> parser_;
  std::string text_;  // text mode, non-streamed
  bool head_sent_ = false;
  bool opened_ = false;
  std::chrono::steady_clock::time_point last_keepalive_;
  std::chrono::steady_clock::time_point created_;  // about when it was submitted
  size_t queued_calls_ = 0;
  // No lock: on_queued runs under the service's queue lock, and the worker takes the job off the
  // queue under that lock before its first callback, so the calls never overlap.
};

// The finish reason a client sees for a chat-shaped turn: tool_calls for a complete block;
// else from the serving outcome: for output that ended inside a block, length when a limit cut
// it (max_tokens, context, deadline) and stop when anything else ended it (the unclosed call is
// left out: a model output is a completed turn, never a server error); error only for an engine
// failure or a cancellation.
// Without a client limit (`client_limited` false) the end of the context is a normal end (stop).
ClientFinish turn_finish_reason(const serving::GenerationResult& result, const protocol::ParsedMessage* message,
                                bool client_limited = true);

}  // namespace ds4::http
