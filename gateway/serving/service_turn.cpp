// One job on the engine worker, as named steps: check the prompt, reuse the longest cached
// prefix (the PrefixCache's choice), prefill the rest, keep a restore point, decode, keep another,
// account. See service.hpp for what each restore point is for.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <random>

#include "gateway/cache/token_prefix.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/serving/stop_sequence_filter.hpp"
#include "gateway/serving/token_choice.hpp"
#include "gateway/serving/turn_decoder.hpp"

namespace ds4::serving {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

uint64_t fresh_seed() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL);
  return s ? s : 1;
}

}  // namespace

struct Service::Turn {
  Queued& q;
  BatchedSequence& seq;
  GenerationJob& job;
  GenerationResult result;
  GenerationUsage& usage = result.usage;

  bool ended(FinishReason reason) {
    result.finish = reason;
    return true;
  }
  // True (and the finish reason set) when the job was cancelled or ran out of time.
  bool interrupted() {
    if (job.cancelled->load()) return ended(FinishReason::Cancelled);
    if (Clock::now() >= job.deadline) return ended(FinishReason::Timeout);
    return false;
  }
};

void Service::run(Queued& q, BatchedSequence& seq) {
  Turn turn{q, seq, q.job, {}};
  GenerationJob& job = q.job;
  GenerationUsage& usage = turn.usage;
  usage.prompt_tokens = job.prompt.size();
  usage.queue_seconds = seconds_since(q.enqueued);
  try {
    check_prompt(job, seq);
    cache_.reuse(seq, job, usage);
    cache_.set_session(seq, job.session);     // restore points kept from here on are this session's
    usage.prompt_tokens = job.prompt.size();  // a byte-prefix match may have re-tokenized the tail
    metrics_.count_cache_outcome(cache_outcome_name(usage.cache));
    if (prefill_rest(turn)) {
      job.sink->on_prefilled(usage);
      decode_turn(turn);
      seq.idle();  // the other sessions' steps stop waiting for this one
      cache_.keep(seq, cache::CheckpointReason::Turn, false);
    }
    // else interrupted: a half-prefilled prompt is still a valid prefix of it; kept for a retry.
  } catch (const std::exception& e) {
    spdlog::error("serving: generation failed after {} prompt / {} sampled tokens: {}", usage.prompt_tokens,
                  usage.completion_tokens, e.what());
    turn.result.finish = FinishReason::Error;
    turn.result.error = e.what();
    if (dynamic_cast<const EngineLost*>(&e) != nullptr) {
      std::lock_guard lock(mu_);
      if (!engine_lost_) {
        engine_lost_ = true;
        state_ = ServiceState::Failed;
        failure_ = std::string("the engine cannot run anything more in this process: ") + e.what();
      }
    }
    // The state may be half-updated; start clean next time.
    try {
      cache_.clear_live(seq);
    } catch (const std::exception& e2) {
      spdlog::error("serving: clearing the context failed too: {}", e2.what());
    }
  }
  seq.idle();
  account(turn);
}

void Service::check_prompt(const GenerationJob& job, const EngineSequence& seq) const {
  if (job.prompt.empty()) throw std::invalid_argument("empty prompt");
  if (job.prompt.size() >= seq.capacity())
    throw std::length_error("prompt has " + std::to_string(job.prompt.size()) + " tokens, context holds " +
                            std::to_string(seq.capacity()));
}

bool Service::prefill_rest(Turn& turn) {
  GenerationJob& job = turn.job;
  GenerationUsage& usage = turn.usage;
  BatchedSequence& seq = turn.seq;
  // A restore point's snapshot (and disk write) is slow: the other sessions' steps go on meanwhile.
  auto keep = [&](cache::CheckpointReason reason, bool to_disk) {
    seq.idle();
    cache_.keep(seq, reason, to_disk);
  };
  const auto start = Clock::now();
  const size_t interval = config_.checkpoint_interval_tokens;
  const size_t margin = config_.prompt_point_margin_tokens;
  bool stopped = false;
  for (int attempt = 0;; attempt++) {
    try {
      // The prompt's restore point: `margin` tokens before its end, so that the next prompt,
      // which re-renders this one's last tokens (the reply's opening) differently, still
      // finds it as a prefix. The last chunk is split there. When the reused prefix already
      // reaches past that point, the point goes at the end of the prompt instead.
      const size_t point = job.prompt.size() > margin ? job.prompt.size() - margin : job.prompt.size();
      // Reused up to the point or beyond it: the point is what was restored (kept already),
      // or, beyond it, one at the end of the prompt is the best there is.
      bool point_passed = seq.tokens().size() > point;
      if (seq.tokens().size() == point) keep(cache::CheckpointReason::Cold, false);
      std::span<const Token> rest(job.prompt.data() + seq.tokens().size(), job.prompt.size() - seq.tokens().size());
      while (!rest.empty() && !(stopped = turn.interrupted())) {
        const size_t before = seq.tokens().size();
        size_t n = std::min(rest.size(), std::max<size_t>(1, config_.prefill_chunk_tokens));
        if (before < point) n = std::min(n, point - before);
        seq.append(rest.first(n));
        rest = rest.subspan(n);
        // Long prefills leave a disk checkpoint every `interval` tokens, so a crash or a
        // restart halfway through a 200K-token prompt does not start it over.
        const bool crossed = !rest.empty() && interval && before / interval != seq.tokens().size() / interval;
        // Nothing reused: this prompt is a new conversation's first restore point on disk too.
        if (seq.tokens().size() == point) keep(cache::CheckpointReason::Cold, usage.cached_tokens == 0 || crossed);
        else if (crossed) keep(cache::CheckpointReason::Interval, true);
        if (!rest.empty()) job.sink->on_prefill_progress(job.prompt.size() - rest.size(), job.prompt.size());
      }
      if (!stopped && point_passed) keep(cache::CheckpointReason::Cold, usage.cached_tokens == 0);
      break;
    } catch (const std::exception& e) {
      // A restore point that restored fine but breaks the engine must not fail every request
      // that finds it: delete it and prefill from scratch, once.
      const std::optional<size_t> restored = cache_.restored_tokens(seq);
      if (attempt > 0 || !restored || (usage.cache != CacheOutcome::Warm && usage.cache != CacheOutcome::Disk)) throw;
      spdlog::warn("serving: the {} restore point of {} tokens failed in the engine ({}); removed it, prefilling cold",
                   cache_outcome_name(usage.cache), *restored, e.what());
      cache_.drop_failed_restore(seq);
      usage.cache = CacheOutcome::Miss;
      usage.cached_tokens = 0;
    }
  }
  usage.prefill_seconds = seconds_since(start);
  metrics_.observe_prefill(static_cast<long>(job.prompt.size() - usage.cached_tokens), usage.prefill_seconds);
  return !stopped;
}

void Service::decode_turn(Turn& turn) {
  GenerationJob& job = turn.job;
  GenerationUsage& usage = turn.usage;
  GenerationResult& result = turn.result;
  EngineBackend& backend = *backend_;
  EngineSequence& seq = turn.seq;
  StopSequenceFilter stops(job.stop);
  sampler::SamplerConfig sampling = job.sampling;
  if (sampling.seed == 0) sampling.seed = fresh_seed();
  sampler::Sampler sampler(sampling);
  const size_t room = seq.capacity() - seq.tokens().size();
  const size_t limit = job.max_tokens ? std::min(job.max_tokens, room) : room;
  const auto start = Clock::now();
  std::vector<float> seen;  // the logits each token was chosen from, for logprobs
  // The token policy (DSML-safe sampling, tool_choice, declared names) may decide each token;
  // else the sampler. With a drafter it verifies drafts on the way, choosing exactly the tokens
  // it would choose without one (speculator.hpp).
  TurnDecoder decoder(
      seq, backend, job.policy.get(), [&](std::span<const float> l) { return sampler.sample(l); },
      job.speculation ? config_.drafter.get() : nullptr, config_.speculation_k, job.prompt);
  bool done = false;
  while (!done) {
    if (turn.interrupted()) break;
    if (usage.completion_tokens >= limit) {
      turn.ended(job.max_tokens && job.max_tokens <= room ? FinishReason::MaxTokens : FinishReason::ContextFull);
      break;
    }
    const DecodedToken d = decoder.next(job.logit_bias, job.logprobs ? &seen : nullptr);
    if (usage.completion_tokens == 0) metrics_.observe_time_to_first_token(seconds_since(turn.q.enqueued));
    if (d.ends) {
      turn.ended(FinishReason::Eos);
      break;
    }
    ++usage.completion_tokens;
    result.completion.push_back(d.token);
    if (job.logprobs) result.logprobs.push_back(token_logprob(seen, d.token, job.top_logprobs, backend));
    auto out = stops.push(d.bytes);
    bool keep_going = out.release.empty() || job.sink->on_text(out.release);
    if (out.stopped) done = turn.ended(FinishReason::StopSequence);
    else if (!keep_going) done = turn.ended(FinishReason::ConsumerStop);
    else if (usage.completion_tokens < limit) decoder.feed(d.token, limit - usage.completion_tokens);
  }
  decoder.finish();
  const SpeculationCounts& spec = decoder.speculation();
  usage.drafted_tokens = spec.drafted;
  usage.accepted_tokens = spec.accepted;
  metrics_.add_speculation(static_cast<long>(usage.drafted_tokens), static_cast<long>(usage.accepted_tokens));
  if (result.finish != FinishReason::StopSequence) {
    std::string tail = stops.flush();
    if (!tail.empty()) job.sink->on_text(tail);
  }
  usage.decode_seconds = seconds_since(start);
  metrics_.observe_decode(static_cast<long>(usage.completion_tokens), usage.decode_seconds);
}

void Service::account(Turn& turn) {
  const GenerationUsage& u = turn.usage;
  metrics_.add_tokens(static_cast<long>(u.prompt_tokens), static_cast<long>(u.completion_tokens),
                      static_cast<long>(u.cached_tokens));
  // The one line per request: what was reused from where, what it cost, how it ended.
  spdlog::info(
      "request: prompt={} cached={} source={} completion={} queue={:.3f}s prefill={:.3f}s decode={:.3f}s "
      "finish={}{}{}",
      u.prompt_tokens, u.cached_tokens, cache_outcome_name(u.cache), u.completion_tokens, u.queue_seconds,
      u.prefill_seconds, u.decode_seconds, finish_reason_name(turn.result.finish),
      turn.job.session.empty() ? "" : " session=", turn.job.session);
  publish_live_tokens(turn.seq);
  // The sink remembers the turn's echo contract inside on_finished (the chat endpoints do);
  // locate what it remembered in the token stream, so the checkpoints holding these tokens (and
  // only those) carry its records (store_on_disk). One turn at a time, or another session's
  // records would be placed in this one's tokens.
  std::lock_guard finishing(finishing_mu_);
  const uint64_t noted = contracts_.remembered();
  turn.job.sink->on_finished(turn.result);
  const std::vector<Token>& live = turn.seq.tokens();
  if (!live.empty() && contracts_.remembered() != noted)
    contracts_.place_new_turns(noted, live.size(), cache::prefix_hashes(std::span<const Token>(live)).back());
}

}  // namespace ds4::serving
