// The shared generation sink. See turn_stream.hpp.
#include "gateway/api/turn_stream.hpp"

#include <spdlog/spdlog.h>

#include "gateway/api/generation_support.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {
namespace openai = protocol::openai;

namespace {
constexpr std::chrono::seconds kKeepAliveEvery{5};
}

TurnStream::TurnStream(std::unique_ptr<TurnFormat> format, TurnOptions options)
    : format_(std::move(format)), options_(std::move(options)), created_(std::chrono::steady_clock::now()) {
  if (options_.parse_chat) parser_.emplace(options_.thinking_started, nullptr, options_.tool_calls);
}

void TurnStream::send(std::string bytes) {
  if (bytes.empty()) return;
  if (auto channel = channel_.lock()) channel->send_chunk(std::move(bytes));
}

void TurnStream::send_head() {
  if (head_sent_) return;
  head_sent_ = true;
  if (auto channel = channel_.lock()) {
    if (options_.stream) {
      channel->send_head(sse_head());
    } else {
      ResponseHead head = json_head(200, {});
      head.streaming = true;  // chunked: the JSON document follows the keep-alive newlines
      channel->send_head(std::move(head));
    }
  }
}

// Bytes that keep a waiting connection busy without changing what the client reads: an SSE
// comment on streams, JSON's insignificant whitespace before a non-streamed body.
void TurnStream::keep_alive(std::string_view sse_comment) {
  send_head();
  last_keepalive_ = std::chrono::steady_clock::now();
  send(options_.stream ? std::string(sse_comment) : std::string("\n"));
}

// A stream opens at once. A non-streamed request commits its 200 head only at the first tick
// after the submit (it has waited a keep-alive interval), so a short wait, or a shutdown that
// drops it right away, still gets its real status (503, ...).
void TurnStream::on_queued(size_t position) {
  if (opened_) return;
  if (!options_.stream && !head_sent_ && ++queued_calls_ < 2) return;
  keep_alive(": queued, position " + std::to_string(position) + "\n\n");
}

void TurnStream::open(const serving::GenerationUsage& usage) {
  if (opened_) return;
  send_head();
  opened_ = true;
  send(format_->open(usage));
}

// Long prefills: open the stream early and send an SSE comment at most every 5 s, so that
// clients with idle timeouts do not give up (comments are not events; every client skips them).
void TurnStream::on_prefill_progress(size_t, size_t) {
  if (opened_) return;
  const auto now = std::chrono::steady_clock::now();
  if (head_sent_ && now - last_keepalive_ < kKeepAliveEvery) return;
  if (!head_sent_ && !options_.stream && now - created_ < kKeepAliveEvery) return;  // see on_queued
  keep_alive(": prefill\n\n");
}

// The non-streamed answer: the whole head, or, once keep-alives committed a 200 head, its body.
void TurnStream::answer(ResponseChannel& channel, ResponseHead head) {
  if (!head_sent_) {
    channel.send_head(std::move(head));
    return;
  }
  if (head.status != 200)
    spdlog::warn("{}: answering {} after the 200 head of a waiting request; the body carries the error", options_.label,
                 head.status);
  send(std::move(head.body));
}

void TurnStream::on_prefilled(const serving::GenerationUsage& usage) {
  if (options_.stream) open(usage);
}

void TurnStream::deliver(std::string_view text) {
  if (text.empty()) return;
  if (parser_) {
    handle(parser_->feed(text));
  } else if (options_.stream) {
    send(format_->text(text));
  } else {
    text_.append(text);
  }
}

void TurnStream::handle(const std::vector<protocol::Event>& events) {
  if (!options_.stream || events.empty()) return;
  send(format_->events(events));
}

bool TurnStream::on_text(std::string_view bytes) {
  deliver(assembler_.push(bytes));
  // The block closed: the turn is complete; anything sampled after it is not part of it.
  return !(parser_ && parser_->tool_calls_done());
}

ClientFinish turn_finish_reason(const serving::GenerationResult& result, const protocol::ParsedMessage* msg,
                                bool client_limited) {
  ClientFinish finish = client_finish_reason(result.finish);
  if (msg && msg->status == protocol::ToolCallsStatus::Complete) finish = ClientFinish::ToolCalls;
  // Ended inside a block: a cut by max_tokens (or the context, or the deadline) is a length stop,
  // as the APIs report any cut, so the client knows to retry with more room; anything else (a
  // stop sequence) a stop. The unclosed call is left out of the answer either way. Retrying
  // would sample the same output again, so a model output is never an error.
  // The client asked for no limit: the context's end is none it could raise (Codex fails a turn
  // on an `incomplete` it did not ask for). Cut text stays as sampled; an unclosed call is left out.
  if (!client_limited && result.finish == serving::FinishReason::ContextFull && finish == ClientFinish::Length)
    finish = ClientFinish::Stop;
  return finish;
}

void TurnStream::on_finished(const serving::GenerationResult& result) {
  auto channel = channel_.lock();
  if (result.finish == serving::FinishReason::Cancelled && (!channel || channel->consumer_gone())) {
    if (channel) channel->finish();
    return;  // the client left; nobody to answer
  }
  if (!channel) return;
  if (result.finish == serving::FinishReason::Error && (!head_sent_ || !options_.stream) &&
      result.usage.completion_tokens == 0) {
    answer(*channel, format_->error(500, "generation failed: " + result.error));
    channel->finish();
    return;
  }
  if (result.finish == serving::FinishReason::Cancelled && !result.error.empty() && !options_.stream &&
      result.usage.completion_tokens == 0) {
    // Dropped unrun (the server stops): say so instead of an empty completion.
    answer(*channel, format_->error(503, result.error + "; retry against the restarted service"));
    channel->finish();
    return;
  }
  if (result.finish == serving::FinishReason::Error)
    spdlog::warn("{}: generation failed after {} tokens: {}", options_.label, result.usage.completion_tokens,
                 result.error);

  deliver(assembler_.flush());
  if (parser_) handle(parser_->finish());
  const protocol::ParsedMessage* msg = parser_ ? &parser_->message() : nullptr;

  // Remember the turn as generated, so its echo can be replayed exactly.
  if (msg && options_.contracts_of && result.finish != serving::FinishReason::Error &&
      result.finish != serving::FinishReason::Cancelled)
    options_.contracts_of->contracts().remember(protocol::make_turn_contract(options_.turn_anchor, *msg));

  TurnOutcome outcome{result,
                      msg,
                      text_,
                      turn_finish_reason(result, msg, options_.client_limited),
                      usage_of(result.usage, options_.protocol_tokens),
                      {}};
  outcome.ds4d.contract = options_.contract;
  outcome.ds4d.cache = openai::CacheReport{serving::cache_source_name(result.usage.cache), result.usage.cached_tokens,
                                           result.usage.prompt_tokens};
  if (result.usage.drafted_tokens)
    outcome.ds4d.speculation = openai::SpeculationReport{result.usage.drafted_tokens, result.usage.accepted_tokens};

  if (options_.stream) {
    open(result.usage);
    send(format_->close(outcome));
  } else {
    answer(*channel, format_->whole(outcome));
  }
  channel->finish();
}

}  // namespace ds4::http
