// The engine worker's life: model lifecycle, admission, the queue, the slots and their loop. One
// job's run is in service_turn.cpp; the restore points are the PrefixCache's. See service.hpp.
#include "gateway/serving/service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <random>

#include "gateway/cache/token_prefix.hpp"

namespace ds4::serving {

struct Service::Slot {
  size_t index = 0;
  std::unique_ptr<EngineSequence> engine;  // the backend's; null: it could not be made
  std::unique_ptr<BatchedSequence> seq;    // what turns use
  bool started = false;                    // the thread has tried to make its sequence
  bool usable = false;                     // takes jobs (slot 0 always does once started)
  std::optional<Queued> job;               // handed over by dispatch_locked(), not yet taken
  CancelFlag cancel;                       // the job it runs, for stop()
  bool busy = false;                       // holds a job, from hand-over to the end of its run
  uint64_t last_used = 0;
  std::thread thread;
};
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Eos: return "eos";
    case FinishReason::StopSequence: return "stop_sequence";
    case FinishReason::ConsumerStop: return "consumer_stop";
    case FinishReason::MaxTokens: return "max_tokens";
    case FinishReason::ContextFull: return "context_full";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Timeout: return "timeout";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

const char* cache_outcome_name(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::Cold: return "cold";
    case CacheOutcome::Live: return "live";
    case CacheOutcome::Miss: return "miss";
    case CacheOutcome::Warm: return "warm";
    case CacheOutcome::Disk: return "disk";
  }
  return "unknown";
}

const char* cache_source_name(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::Live: return "live";
    case CacheOutcome::Warm: return "warm";
    case CacheOutcome::Disk: return "disk";
    case CacheOutcome::Cold:
    case CacheOutcome::Miss: return "none";
  }
  return "none";
}

Service::Service(ServiceConfig config, Metrics& metrics)
    : config_(config),
      metrics_(metrics),
      contracts_(config.contract_store_bytes),
      cache_(PrefixCacheConfig{config.hot_bytes, config.cache_dir, config.disk_bytes, config.checkpoint_min_tokens},
             metrics, contracts_) {
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
    if (state_ == ServiceState::Stopping) return;
    backend_ = std::move(backend);
    // The checkpoint directory is indexed before the service reports ready, so the first
    // request after a restart already finds its checkpoint.
    cache_.open(*backend_);
    state_ = ServiceState::Ready;
    progress_ = 1;
    if (!config_.remote) {  // gateway mode has no local worker
      StepBatcherConfig bc;
      bc.max_rows = std::max<size_t>(config_.prefill_chunk_tokens, 64);
      bc.prefill_rows_beside_decode = config_.prefill_tokens_beside_decode;
      bc.min_grace = config_.step_min_grace;
      bc.latency_ratio = config_.prefill_latency_ratio;
      batcher_ = std::make_unique<StepBatcher>(*backend_, bc, [this](const StepRecord& r) {
        metrics_.observe_step(long(r.sequences), long(r.decode_rows), long(r.verify_rows), long(r.prefill_rows));
      });
      for (size_t i = 0; i < std::max<size_t>(config_.max_batch, 1); i++) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->index = i;
      }
      for (auto& slot : slots_) slot->thread = std::thread([this, s = slot.get()] { slot_main(*s); });
      ticker_ = std::thread([this] { ticker_main(); });
    }
  }
  metrics_.set_load_progress_ratio(1);
  metrics_.set_model_loaded(true);
  spdlog::info("serving: model {} ready, context {} tokens", backend_->model_id(), backend_->context_length());
}

void Service::set_load_failed(std::string reason) {
  std::lock_guard lock(mu_);
  if (state_ == ServiceState::Loading) {
    state_ = ServiceState::Failed;
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
bool Service::engine_lost() const {
  std::lock_guard lock(mu_);
  return engine_lost_;
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
size_t Service::running() const {
  std::lock_guard lock(mu_);
  return running_;
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
      case ServiceState::Loading:
        metrics_.count_rejection("loading");
        return Refusal{503, "loading", "the model is still loading", std::chrono::seconds(5)};
      case ServiceState::Failed:
        if (engine_lost_) {
          metrics_.count_rejection("engine_lost");
          return Refusal{503, "engine_lost", failure_, {}};
        }
        metrics_.count_rejection("load_failed");
        return Refusal{503, "load_failed", "the model failed to load: " + failure_, {}};
      case ServiceState::Stopping:
        metrics_.count_rejection("shutting_down");
        return Refusal{503, "shutting_down", "the server is shutting down", {}};
      case ServiceState::Ready: break;
    }
    gate = gate_;
  }
  // The gate reads /proc; call it outside the lock.
  if (gate) {
    if (auto reason = gate()) {
      metrics_.count_rejection("memory_floor");
      return Refusal{503, "memory_floor", "not enough free memory to start new work: " + *reason, config_.retry_after};
    }
  }
  if (config_.remote) return config_.remote->submit(std::move(job));
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
    if (state_ != ServiceState::Ready) {
      metrics_.count_rejection("shutting_down");
      refusal = Refusal{503, "shutting_down", "the server is shutting down", {}};
    } else if (queue_.size() >= config_.max_queued_jobs) {
      metrics_.count_rejection("queue_full");
      refusal = Refusal{429, "queue_full",
                        "too many requests waiting for the engine (" + std::to_string(queue_.size()) + " queued)",
                        config_.retry_after};
    } else {
      queue_.push_back(Queued{std::move(job), Clock::now()});
      dispatch_locked();
      // It has to wait (every slot is busy): say so now, so a stream opens before the engine
      // gets to it. Slots still starting up take it in a moment.
      if (!queue_.empty() && !slot_starting_locked()) queue_.back().job.sink->on_queued(queue_.size());
    }
    metrics_.set_queue_depth(static_cast<long>(queue_.size()));
  }
  for (auto& q : gone) finish_unrun(q, FinishReason::Cancelled);
  return refusal;
}

void Service::stop(std::chrono::milliseconds drain) {
  std::deque<Queued> dropped;
  {
    std::unique_lock lock(mu_);
    if (state_ != ServiceState::Stopping) state_ = ServiceState::Stopping;
    dropped.swap(queue_);
    metrics_.set_queue_depth(0);
  }
  for (auto& q : dropped) finish_unrun(q, FinishReason::Cancelled, "the server is shutting down");
  if (config_.remote) config_.remote->stop(drain);
  {
    std::unique_lock lock(mu_);
    if (!idle_cv_.wait_for(lock, drain, [&] { return running_ == 0; }))
      for (auto& slot : slots_) {
        if (slot->cancel) slot->cancel->store(true);
        if (slot->job) slot->job->job.cancelled->store(true);
      }
    stop_worker_ = true;
    cv_.notify_all();
    ticker_cv_.notify_all();
  }
  for (auto& slot : slots_)
    if (slot->thread.joinable()) slot->thread.join();
  if (ticker_.joinable()) ticker_.join();
  // Nothing runs now; what the RAM holds goes to disk (once: a second stop() finds no threads).
  std::vector<const EngineSequence*> live;
  for (auto& slot : slots_)
    if (slot->seq) live.push_back(slot->seq.get());
  if (!live.empty()) cache_.write_shutdown_checkpoints(live);
  for (auto& slot : slots_) slot->seq.reset(), slot->engine.reset();
}

void Service::publish_live_tokens(const EngineSequence& seq) {
  const size_t n = seq.tokens().size();
  cache_.publish();
  std::lock_guard lock(mu_);
  live_tokens_ = n;
}

std::string Service::cache_health() const { return cache_.health(); }

Service::CacheStats Service::cache_stats() const { return cache_.stats(); }

void Service::finish_unrun(Queued& q, FinishReason reason, std::string error) {
  GenerationResult r;
  r.finish = reason;
  r.error = std::move(error);
  r.usage.prompt_tokens = q.job.prompt.size();
  r.usage.queue_seconds = seconds_since(q.enqueued);
  q.job.sink->on_finished(r);
}

void Service::ticker_main() {
  std::unique_lock lock(mu_);
  while (!stop_worker_) {
    ticker_cv_.wait_for(lock, config_.queue_keepalive, [&] { return stop_worker_; });
    if (stop_worker_) break;
    size_t position = 0;
    for (auto& q : queue_) q.job.sink->on_queued(++position);
  }
}

bool Service::slot_starting_locked() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->started; });
}

void Service::dispatch_locked() {
  while (!queue_.empty()) {
    // Which free slot: the one that reuses the most of the prompt from its live context: one the
    // prompt extends (a conversation's next turn), or one cut back to their common prefix (a
    // resent prompt, a shared system prompt). Cutting gives another conversation's context up
    // (to the warm store, when on), so a cut counts only where it saves a prefix worth keeping
    // (checkpoint_min_tokens, or half the prompt); otherwise an empty slot goes first. Among
    // equals: extension, then empty, then cut, then the slot used longest ago.
    const std::vector<Token>& prompt = queue_.front().job.prompt;
    enum Kind { Cut, Empty, Extension };
    Slot* best = nullptr;
    std::pair<size_t, int> best_rank{0, Cut};
    for (auto& slot : slots_) {
      if (!slot->usable || slot->busy) continue;
      std::pair<size_t, int> rank{0, Empty};  // empty, or no context at all
      if (slot->seq && !slot->seq->tokens().empty()) {
        const std::vector<Token>& live = slot->seq->tokens();
        const size_t common = cache::common_prefix<Token>(live, prompt);
        const bool worth = common >= config_.checkpoint_min_tokens || 2 * common > prompt.size();
        rank = common == live.size() ? std::pair{common, int(Extension)} : std::pair{worth ? common : 0, int(Cut)};
      }
      if (!best || rank > best_rank || (rank == best_rank && slot->last_used < best->last_used)) {
        best = slot.get();
        best_rank = rank;
      }
    }
    // A slot still starting up will be an empty one: wait for it rather than cut a context.
    if (!best || (best_rank.second == Cut && slot_starting_locked())) break;
    best->job = std::move(queue_.front());
    queue_.pop_front();
    best->busy = true;
    best->last_used = ++slot_clock_;
    running_++;
  }
  metrics_.set_queue_depth(static_cast<long>(queue_.size()));
  metrics_.set_requests_running(static_cast<long>(running_));
  cv_.notify_all();
}

void Service::slot_main(Slot& slot) {
  std::shared_ptr<EngineBackend> backend = this->backend();
  try {
    // The slots start together; a backend makes one sequence at a time (engine_backend.hpp).
    std::lock_guard making(new_sequence_mu_);
    slot.engine = backend->new_sequence();
    slot.seq = batcher_->wrap(*slot.engine);
  } catch (const std::exception& e) {
    spdlog::error("serving: cannot create the engine context of slot {}: {}", slot.index, e.what());
    if (slot.index == 0) {
      std::lock_guard lock(mu_);
      state_ = ServiceState::Failed;
      failure_ = std::string("cannot create the engine context: ") + e.what();
    }
  }
  {
    std::lock_guard lock(mu_);
    slot.started = true;
    // Slot 0 takes jobs even without a context (they end with an error, so nothing waits forever).
    slot.usable = slot.seq || slot.index == 0;
    dispatch_locked();
  }
  for (;;) {
    Queued q;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_worker_ || slot.job; });
      if (!slot.job) break;  // stop_worker_
      q = std::move(*slot.job);
      slot.job.reset();
      slot.cancel = q.job.cancelled;
    }
    metrics_.observe_queue_wait(seconds_since(q.enqueued));
    if (!slot.seq) finish_unrun(q, FinishReason::Error, "no engine context");
    else if (q.job.cancelled->load()) finish_unrun(q, FinishReason::Cancelled);
    else if (Clock::now() >= q.job.deadline) finish_unrun(q, FinishReason::Timeout, "timed out in the queue");
    else run(q, *slot.seq);
    {
      std::lock_guard lock(mu_);
      slot.busy = false;
      slot.cancel.reset();
      running_--;
      if (!stop_worker_) dispatch_locked();
      else metrics_.set_requests_running(static_cast<long>(running_));
    }
    idle_cv_.notify_all();
  }
}

}  // namespace ds4::serving
