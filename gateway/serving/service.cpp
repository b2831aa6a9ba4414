// The engine worker's life: model lifecycle, admission, the queue and the worker loop. One job's
// run is in service_turn.cpp; the restore points are the PrefixCache's. See service.hpp.
#include "gateway/serving/service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <random>

#include "gateway/serving/stop_sequence_filter.hpp"

namespace ds4::serving {
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
      worker_ = std::thread([this] { worker_main(); });
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
      case ServiceState::Loading:
        metrics_.count_rejection("loading");
        return Refusal{503, "loading", "the model is still loading", std::chrono::seconds(5)};
      case ServiceState::Failed:
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
      // It has to wait: say so now, so a stream opens before the engine gets to it.
      if (running_ || queue_.size() > 1) queue_.back().job.sink->on_queued(queue_.size());
      cv_.notify_one();
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
    if (!idle_cv_.wait_for(lock, drain, [&] { return !running_; }) && running_cancel_) running_cancel_->store(true);
    stop_worker_ = true;
    cv_.notify_all();
    ticker_cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  if (ticker_.joinable()) ticker_.join();
}

void Service::publish_live_tokens() {
  size_t n = sequence_ ? sequence_->tokens().size() : 0;
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

void Service::worker_main() {
  std::shared_ptr<EngineBackend> backend = this->backend();
  try {
    sequence_ = backend->new_sequence();
  } catch (const std::exception& e) {
    spdlog::error("serving: cannot create the engine context: {}", e.what());
    std::lock_guard lock(mu_);
    state_ = ServiceState::Failed;
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
    if (!sequence_) finish_unrun(q, FinishReason::Error, "no engine context");
    else if (q.job.cancelled->load()) finish_unrun(q, FinishReason::Cancelled);
    else if (Clock::now() >= q.job.deadline) finish_unrun(q, FinishReason::Timeout, "timed out in the queue");
    else run(q);
    metrics_.set_requests_running(0);
    {
      std::lock_guard lock(mu_);
      running_ = false;
      running_cancel_.reset();
    }
    idle_cv_.notify_all();
  }
  // Stopping: the queue is drained and nothing runs; what the RAM holds goes to disk.
  if (sequence_) cache_.write_shutdown_checkpoints(*sequence_);
}

}  // namespace ds4::serving
