// One job's answer from a vLLM or SGLang upstream. See completions_stream.hpp.
#include "gateway/upstream/completions_stream.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "gateway/upstream/completions_wire.hpp"

namespace ds4::upstream {
using Clock = std::chrono::steady_clock;
using serving::FinishReason;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

CompletionsStream::CompletionsStream(const serving::GenerationJob& job, const serving::EngineBackend& tokenizer,
                                     std::string upstream)
    : job_(job),
      tokenizer_(tokenizer),
      upstream_(std::move(upstream)),
      check_(job.policy.get(), tokenizer),
      stops_(job.stop),
      start_(Clock::now()) {
  result_.usage.prompt_tokens = job.prompt.size();
}

void CompletionsStream::finish(FinishReason reason, std::string error) {
  if (over_) return;
  over_ = true;
  result_.finish = reason;
  result_.error = std::move(error);
  if (reason != FinishReason::StopSequence && reason != FinishReason::Error) release(stops_.flush());
  result_.usage.completion_tokens = result_.completion.size();
  const auto now = Clock::now();
  if (committed_) {
    result_.usage.prefill_seconds = seconds(first_token_ - start_);
    result_.usage.decode_seconds = seconds(now - first_token_);
  } else {
    result_.usage.prefill_seconds = seconds(now - start_);
  }
}

void CompletionsStream::release(const std::string& bytes) {
  if (bytes.empty()) return;
  if (!job_.sink->on_text(bytes) && !over_) finish(FinishReason::ConsumerStop);
}

void CompletionsStream::take(serving::Token token, const ChunkLogprob* logprob) {
  if (over_ || ended_) return;
  if (!committed_) {
    // The engines say nothing between the request and the first token: the prompt is in now.
    committed_ = true;
    first_token_ = Clock::now();
    job_.sink->on_prefilled(result_.usage);
  }
  if (token < 0 || static_cast<size_t>(token) >= tokenizer_.vocab_size())
    return finish(FinishReason::Error,
                  fmt::format("upstream {} sampled token id {}, outside engine.tokenizer's vocabulary of {}: it serves "
                              "another model",
                              upstream_, token, tokenizer_.vocab_size()));
  std::optional<std::string> refused;
  try {
    refused = check_.next(token);
  } catch (const std::exception& e) {  // a token without bytes: no output of a model
    refused = fmt::format("token {}: {}", token, e.what());
  }
  if (refused)
    return finish(FinishReason::Error,
                  fmt::format("upstream {} produced output the gateway rejects at completion token {}: {} (vLLM and "
                              "SGLang cannot run ds4d's token policy; docs/scale-out.md)",
                              upstream_, result_.completion.size(), *refused));
  if (tokenizer_.is_end_of_generation(token)) {
    ended_ = true;  // the usage chunk may still follow
    return;
  }
  std::string bytes;
  try {
    bytes = tokenizer_.token_bytes(token);
  } catch (const std::exception& e) {
    return finish(FinishReason::Error, fmt::format("upstream {} sampled token {}: {}", upstream_, token, e.what()));
  }
  result_.completion.push_back(token);
  if (job_.logprobs) {
    serving::TokenLogprob lp;
    lp.bytes = bytes;
    if (logprob) {
      lp.logprob = logprob->logprob;
      for (const auto& [key, value] : logprob->top) {
        std::string shown = key;
        if (key.starts_with("token_id:")) try {
            shown = tokenizer_.token_bytes(static_cast<serving::Token>(std::stol(key.substr(9))));
          } catch (const std::exception&) {
            continue;
          }
        lp.top.emplace_back(std::move(shown), value);
      }
    }
    result_.logprobs.push_back(std::move(lp));
  }
  const serving::StopSequenceFilter::Result out = stops_.push(bytes);
  release(out.release);
  if (out.stopped) finish(FinishReason::StopSequence);
}

bool CompletionsStream::line(std::string_view text) {
  std::optional<CompletionsChunk> chunk = parse_completions_line(text);
  if (!chunk) return true;
  if (chunk->done) {
    close();
    return false;
  }
  if (!chunk->error.empty()) {
    finish(FinishReason::Error, "upstream " + upstream_ + " reported an error: " + chunk->error);
    return false;
  }
  if (chunk->choice && !chunk->has_token_ids && !chunk->text.empty()) {
    finish(FinishReason::Error, "upstream " + upstream_ +
                                    " answered without token_ids: it does not know return_token_ids (vLLM 0.10.2 or "
                                    "later, SGLang with its PR #30917 are needed; docs/scale-out.md)");
    return false;
  }
  for (size_t i = 0; i < chunk->tokens.size() && !over_; ++i)
    take(chunk->tokens[i], i < chunk->logprobs.size() ? &chunk->logprobs[i] : nullptr);
  if (chunk->finish) finish_reason_ = chunk->finish;
  if (chunk->has_usage && !over_) {
    if (chunk->cached_tokens) {
      result_.usage.cached_tokens = std::min(*chunk->cached_tokens, job_.prompt.size());
      result_.usage.cache = result_.usage.cached_tokens ? serving::CacheOutcome::Live : serving::CacheOutcome::Cold;
    }
  }
  return !over_;
}

void CompletionsStream::close() {
  if (over_) return;
  if (!finish_reason_) throw std::runtime_error(upstream_ + ": the completions stream ended without a finish_reason");
  const std::string& why = *finish_reason_;
  if (why == "stop") {
    // An end of generation (the engines leave it out of token_ids or not): the policy must agree.
    if (!ended_)
      if (std::optional<std::string> refused = check_.end())
        return finish(FinishReason::Error,
                      fmt::format("upstream {} ended its output where the gateway rejects it: {} (docs/scale-out.md)",
                                  upstream_, *refused));
    return finish(FinishReason::Eos);
  }
  if (why == "length")
    return finish(job_.max_tokens && result_.completion.size() >= job_.max_tokens ? FinishReason::MaxTokens
                                                                                  : FinishReason::ContextFull);
  finish(FinishReason::Error, "upstream " + upstream_ + " ended the generation with finish_reason '" + why + "'");
}

}  // namespace ds4::upstream
