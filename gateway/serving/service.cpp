// The engine worker: queue, admission, prefix reuse, prefill, decode loop. See service.hpp.
#include "gateway/serving/service.hpp"

#include <algorithm>
#include <optional>
#include <random>
#include <spdlog/spdlog.h>

#include "gateway/serving/stop_sequence_filter.hpp"

namespace ds4::serving {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

uint64_t fresh_seed() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ULL);
  return s ? s : 1;
}

// When the live tokens are not a token prefix of the prompt but their bytes are a byte prefix of
// the prompt's bytes, returns live tokens + the tokenization of the remaining prompt text. (Never
// slice the prompt's own tokenization at a byte boundary: BPE may merge across it.)
std::optional<std::vector<Token>> extend_by_text(const EngineBackend& backend, const std::vector<Token>& live,
                                                 const std::vector<Token>& prompt) {
  try {
    std::string live_text = backend.decode(live);
    std::string prompt_text = backend.decode(prompt);
    if (prompt_text.size() < live_text.size() || prompt_text.compare(0, live_text.size(), live_text) != 0)
      return std::nullopt;
    std::vector<Token> out = live;
    auto suffix = backend.encode(std::string_view(prompt_text).substr(live_text.size()));
    out.insert(out.end(), suffix.begin(), suffix.end());
    return out;
  } catch (const std::exception& e) {
    spdlog::debug("serving: text prefix match failed: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::eos: return "eos";
    case FinishReason::stop_sequence: return "stop_sequence";
    case FinishReason::consumer_stop: return "consumer_stop";
    case FinishReason::max_tokens: return "max_tokens";
    case FinishReason::context_full: return "context_full";
    case FinishReason::cancelled: return "cancelled";
    case FinishReason::timeout: return "timeout";
    case FinishReason::error: return "error";
  }
  return "unknown";
}

const char* cache_outcome_name(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::cold: return "cold";
    case CacheOutcome::live: return "live";
    case CacheOutcome::miss: return "miss";
  }
  return "unknown";
}

Service::Service(ServiceConfig config, Metrics& metrics)
    : config_(config), metrics_(metrics), contracts_(config.contract_store_bytes) {
  metrics_.set_model_loaded(false);
  metrics_.set_load_progress_ratio(0);
  metrics_.set_queue_depth(0);
  metrics_.set_requests_running(0);
}

Service::~Service() { stop(std::chrono::milliseconds(0)); }

void Service::set_load_progress(double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  {
    std::lock_guard lock(mu_);
    progress_ = fraction;
  }
  metrics_.set_load_progress_ratio(fraction);
}

void Service::set_backend(std::shared_ptr<EngineBackend> backend) {
  if (!backend) throw std::invalid_argument("Service::set_backend: null backend");
  {
    std::lock_guard lock(mu_);
    if (backend_) throw std::logic_error("Service::set_backend: a model is already set");
    if (state_ == ServiceState::stopping) return;
    backend_ = std::move(backend);
    state_ = ServiceState::ready;
    progress_ = 1;
    worker_ = std::thread([this] { worker_main(); });
  }
  metrics_.set_load_progress_ratio(1);
  metrics_.set_model_loaded(true);
  spdlog::info("serving: model {} ready, context {} tokens", backend_->model_id(), backend_->context_length());
}

void Service::set_load_failed(std::string reason) {
  std::lock_guard lock(mu_);
  if (state_ == ServiceState::loading) {
    state_ = ServiceState::failed;
    failure_ = std::move(reason);
  }
}

void Service::set_admission_gate(AdmissionGate gate) {
  std::lock_guard lock(mu_);
  gate_ = std::move(gate);
}

ServiceState Service::state() const {
  std::lock_guard lock(mu_);
  return state_;
}
std::optional<std::string> Service::admission_refusal() const {
  AdmissionGate gate;
  {
    std::lock_guard lock(mu_);
    gate = gate_;
  }
  return gate ? gate() : std::nullopt;
}
double Service::load_progress() const {
  std::lock_guard lock(mu_);
  return progress_;
}
std::string Service::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}
std::shared_ptr<EngineBackend> Service::backend() const {
  std::lock_guard lock(mu_);
  return backend_;
}
size_t Service::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}
size_t Service::live_tokens() const {
  std::lock_guard lock(mu_);
  return live_tokens_;
}

std::optional<Refusal> Service::submit(GenerationJob job) {
  if (!job.sink) throw std::invalid_argument("Service::submit: job without a sink");
  AdmissionGate gate;
  {
    std::lock_guard lock(mu_);
    switch (state_) {
      case ServiceState::loading:
        metrics_.count_rejection("loading");
        return Refusal{503, "loading", "the model is still loading", std::chrono::seconds(5)};
      case ServiceState::failed:
        metrics_.count_rejection("load_failed");
        return Refusal{503, "load_failed", "the model failed to load: " + failure_, {}};
      case ServiceState::stopping:
        metrics_.count_rejection("shutting_down");
        return Refusal{503, "shutting_down", "the server is shutting down", {}};
      case ServiceState::ready: break;
    }
    gate = gate_;
  }
  // The gate reads /proc; call it outside the lock.
  if (gate) {
    if (auto reason = gate()) {
      metrics_.count_rejection("memory_floor");
      return Refusal{503, "memory_floor", "not enough free memory to start new work: " + *reason,
                     config_.retry_after};
    }
  }
  std::deque<Queued> gone;  // finished outside the lock
  std::optional<Refusal> refusal;
  {
    std::lock_guard lock(mu_);
    // Jobs whose clients went away hold no slot: drop them now, not when the worker gets to them.
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->job.cancelled->load()) {
        gone.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    if (state_ != ServiceState::ready) {
      metrics_.count_rejection("shutting_down");
      refusal = Refusal{503, "shutting_down", "the server is shutting down", {}};
    } else if (queue_.size() >= config_.max_queued_jobs) {
      metrics_.count_rejection("queue_full");
      refusal = Refusal{429, "queue_full",
                        "too many requests waiting for the engine (" + std::to_string(queue_.size()) + " queued)",
                        config_.retry_after};
    } else {
      queue_.push_back(Queued{std::move(job), Clock::now()});
      cv_.notify_one();
    }
    metrics_.set_queue_depth(static_cast<long>(queue_.size()));
  }
  for (auto& q : gone) finish_unrun(q, FinishReason::cancelled);
  return refusal;
}

void Service::stop(std::chrono::milliseconds drain) {
  std::deque<Queued> dropped;
  {
    std::unique_lock lock(mu_);
    if (state_ != ServiceState::stopping) state_ = ServiceState::stopping;
    dropped.swap(queue_);
    metrics_.set_queue_depth(0);
  }
  for (auto& q : dropped) finish_unrun(q, FinishReason::cancelled, "the server is shutting down");
  {
    std::unique_lock lock(mu_);
    if (!idle_cv_.wait_for(lock, drain, [&] { return !running_; }) && running_cancel_)
      running_cancel_->store(true);
    stop_worker_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void Service::publish_live_tokens() {
  size_t n = sequence_ ? sequence_->tokens().size() : 0;
  std::lock_guard lock(mu_);
  live_tokens_ = n;
}

void Service::finish_unrun(Queued& q, FinishReason reason, std::string error) {
  GenerationResult r;
  r.finish = reason;
  r.error = std::move(error);
  r.usage.prompt_tokens = q.job.prompt.size();
  r.usage.queue_seconds = seconds_since(q.enqueued);
  q.job.sink->on_finished(r);
}

void Service::worker_main() {
  std::shared_ptr<EngineBackend> backend = this->backend();
  try {
    sequence_ = backend->new_sequence();
  } catch (const std::exception& e) {
    spdlog::error("serving: cannot create the engine context: {}", e.what());
    std::lock_guard lock(mu_);
    state_ = ServiceState::failed;
    failure_ = std::string("cannot create the engine context: ") + e.what();
  }
  for (;;) {
    Queued q;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_worker_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stop_worker_
      q = std::move(queue_.front());
      queue_.pop_front();
      metrics_.set_queue_depth(static_cast<long>(queue_.size()));
      running_ = true;
      running_cancel_ = q.job.cancelled;
    }
    metrics_.set_requests_running(1);
    if (!sequence_) finish_unrun(q, FinishReason::error, "no engine context");
    else if (q.job.cancelled->load()) finish_unrun(q, FinishReason::cancelled);
    else if (Clock::now() >= q.job.deadline) finish_unrun(q, FinishReason::timeout, "timed out in the queue");
    else run(q);
    metrics_.set_requests_running(0);
    {
      std::lock_guard lock(mu_);
      running_ = false;
      running_cancel_.reset();
    }
    idle_cv_.notify_all();
  }
}

void Service::run(Queued& q) {
  GenerationJob& job = q.job;
  EngineBackend& backend = *backend_;
  EngineSequence& seq = *sequence_;
  GenerationResult result;
  GenerationUsage& usage = result.usage;
  usage.prompt_tokens = job.prompt.size();
  usage.queue_seconds = seconds_since(q.enqueued);

  auto ended = [&](FinishReason reason) {
    result.finish = reason;
    return true;
  };
  auto interrupted = [&]() -> bool {
    if (job.cancelled->load()) return ended(FinishReason::cancelled);
    if (Clock::now() >= job.deadline) return ended(FinishReason::timeout);
    return false;
  };

  try {
    if (job.prompt.empty()) throw std::invalid_argument("empty prompt");
    if (job.prompt.size() >= seq.capacity())
      throw std::length_error("prompt has " + std::to_string(job.prompt.size()) + " tokens, context holds " +
                              std::to_string(seq.capacity()));

    // Prefix reuse: extend the live context when it is a prefix of the prompt.
    const auto& live = seq.tokens();
    if (live.empty()) {
      usage.cache = CacheOutcome::cold;
    } else if (live.size() <= job.prompt.size() && std::equal(live.begin(), live.end(), job.prompt.begin())) {
      usage.cache = CacheOutcome::live;
      usage.cached_tokens = live.size();
    } else if (auto extended = extend_by_text(backend, live, job.prompt)) {
      // The model sampled a spelling that re-tokenizes differently, but the bytes agree: keep the
      // live tokens and use the prompt's tokenization only after them.
      job.prompt = std::move(*extended);
      if (job.prompt.size() >= seq.capacity())
        throw std::length_error("prompt has " + std::to_string(job.prompt.size()) + " tokens, context holds " +
                                std::to_string(seq.capacity()));
      usage.prompt_tokens = job.prompt.size();
      usage.cache = CacheOutcome::live;
      usage.cached_tokens = live.size();
    } else {
      usage.cache = CacheOutcome::miss;
      spdlog::debug("serving: live context ({} tokens) is not a prefix of the prompt ({} tokens); re-prefilling",
                    live.size(), job.prompt.size());
      seq.clear();
    }
    metrics_.count_cache_outcome(cache_outcome_name(usage.cache));

    auto prefill_start = Clock::now();
    std::span<const Token> rest(job.prompt.data() + usage.cached_tokens, job.prompt.size() - usage.cached_tokens);
    bool stopped = false;
    while (!rest.empty() && !(stopped = interrupted())) {
      size_t n = std::min(rest.size(), std::max<size_t>(1, config_.prefill_chunk_tokens));
      seq.append(rest.first(n));
      rest = rest.subspan(n);
      if (!rest.empty()) job.sink->on_prefill_progress(job.prompt.size() - rest.size(), job.prompt.size());
    }
    usage.prefill_seconds = seconds_since(prefill_start);
    metrics_.observe_prefill(static_cast<long>(job.prompt.size() - usage.cached_tokens), usage.prefill_seconds);
    if (stopped) {
      // A half-prefilled prompt is still a valid prefix of it; keep it for a retry.
      publish_live_tokens();
      job.sink->on_finished(result);
      return;
    }
    job.sink->on_prefilled(usage);

    StopSequenceFilter stops(job.stop);
    sampler::SamplerConfig sampling = job.sampling;
    if (sampling.seed == 0) sampling.seed = fresh_seed();
    sampler::Sampler sampler(sampling);
    size_t room = seq.capacity() - seq.tokens().size();
    size_t limit = job.max_tokens ? std::min(job.max_tokens, room) : room;
    auto decode_start = Clock::now();
    bool done = false;
    while (!done) {
      if (interrupted()) break;
      if (usage.completion_tokens >= limit) {
        ended(job.max_tokens && job.max_tokens <= room ? FinishReason::max_tokens : FinishReason::context_full);
        break;
      }
      std::optional<Token> chosen = job.policy ? job.policy->choose(seq.logits()) : std::nullopt;
      Token t = chosen ? *chosen : sampler.sample(seq.logits());
      if (usage.completion_tokens == 0) metrics_.observe_time_to_first_token(seconds_since(q.enqueued));
      if (backend.is_end_of_generation(t)) {
        ended(FinishReason::eos);
        break;
      }
      ++usage.completion_tokens;
      result.completion.push_back(t);
      std::string bytes = backend.token_bytes(t);
      if (job.policy) job.policy->accepted(t, bytes);
      auto out = stops.push(bytes);
      bool keep_going = out.release.empty() || job.sink->on_text(out.release);
      if (out.stopped) done = ended(FinishReason::stop_sequence);
      else if (!keep_going) done = ended(FinishReason::consumer_stop);
      else if (usage.completion_tokens < limit) seq.append(std::span<const Token>(&t, 1));
    }
    if (result.finish != FinishReason::stop_sequence) {
      std::string tail = stops.flush();
      if (!tail.empty()) job.sink->on_text(tail);
    }
    usage.decode_seconds = seconds_since(decode_start);
    metrics_.observe_decode(static_cast<long>(usage.completion_tokens), usage.decode_seconds);
  } catch (const std::exception& e) {
    spdlog::error("serving: generation failed after {} prompt / {} sampled tokens: {}", usage.prompt_tokens,
                  usage.completion_tokens, e.what());
    result.finish = FinishReason::error;
    result.error = e.what();
    // The state may be half-updated; start clean next time.
    try {
      seq.clear();
    } catch (const std::exception& e2) {
      spdlog::error("serving: clearing the context failed too: {}", e2.what());
    }
  }
  metrics_.add_tokens(static_cast<long>(usage.prompt_tokens), static_cast<long>(usage.completion_tokens),
                      static_cast<long>(usage.cached_tokens));
  publish_live_tokens();
  job.sink->on_finished(result);
}

}  // namespace ds4::serving
