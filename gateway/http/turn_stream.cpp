// The shared generation sink. See turn_stream.hpp.
#include "gateway/http/turn_stream.hpp"

#include <spdlog/spdlog.h>

#include "gateway/http/generation_support.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {
namespace openai = protocol::openai;

TurnStream::TurnStream(std::unique_ptr<TurnFormat> format, TurnOptions options)
    : format_(std::move(format)), options_(std::move(options)) {
  if (options_.parse_chat) parser_.emplace(options_.thinking_started);
}

void TurnStream::send(std::string bytes) {
  if (bytes.empty()) return;
  if (auto channel = channel_.lock()) channel->send_chunk(std::move(bytes));
}

void TurnStream::send_head() {
  if (head_sent_) return;
  head_sent_ = true;
  if (auto channel = channel_.lock()) channel->send_head(sse_head());
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
  if (!options_.stream || opened_) return;
  auto now = std::chrono::steady_clock::now();
  if (head_sent_ && now - last_keepalive_ < std::chrono::seconds(5)) return;
  send_head();
  last_keepalive_ = now;
  send(": prefill\n\n");
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

openai::FinishReason turn_finish_reason(const serving::GenerationResult& result, const protocol::ParsedMessage* msg) {
  openai::FinishReason finish = client_finish_reason(result.finish);
  if (msg && msg->status == protocol::ToolCallsStatus::Complete) finish = openai::FinishReason::ToolCalls;
  if (msg && msg->status == protocol::ToolCallsStatus::Unterminated) finish = openai::FinishReason::Error;
  return finish;
}

void TurnStream::on_finished(const serving::GenerationResult& result) {
  auto channel = channel_.lock();
  if (result.finish == serving::FinishReason::cancelled && (!channel || channel->consumer_gone())) {
    if (channel) channel->finish();
    return;  // the client left; nobody to answer
  }
  if (!channel) return;
  if (result.finish == serving::FinishReason::error && !head_sent_ && result.usage.completion_tokens == 0) {
    channel->send_head(format_->error(500, "generation failed: " + result.error));
    channel->finish();
    return;
  }
  if (result.finish == serving::FinishReason::error)
    spdlog::warn("{}: generation failed after {} tokens: {}", options_.label, result.usage.completion_tokens,
                 result.error);

  deliver(assembler_.flush());
  if (parser_) handle(parser_->finish());
  const protocol::ParsedMessage* msg = parser_ ? &parser_->message() : nullptr;

  // Remember the turn as generated, so its echo can be replayed exactly.
  if (msg && options_.contracts_of && result.finish != serving::FinishReason::error &&
      result.finish != serving::FinishReason::cancelled)
    options_.contracts_of->contracts().remember(protocol::make_turn_contract(options_.turn_anchor, *msg));

  TurnOutcome outcome{result, msg, text_, turn_finish_reason(result, msg), usage_of(result.usage, options_.protocol_tokens),
                      {}};
  outcome.ds4d.contract = options_.contract;
  outcome.ds4d.cache =
      openai::CacheReport{serving::cache_outcome_name(result.usage.cache), result.usage.cached_tokens};

  if (options_.stream) {
    open(result.usage);
    send(format_->close(outcome));
  } else {
    channel->send_head(format_->whole(outcome));
  }
  channel->finish();
}

}  // namespace ds4::http
