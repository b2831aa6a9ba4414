#pragma once
// Service: the one engine worker, its bounded job queue, and the model's lifecycle.
//
// One thread owns the live EngineSequence and runs jobs one at a time, in arrival order. HTTP
// threads submit jobs and get back either nothing (accepted; the sink will hear the rest) or a
// Refusal carrying the HTTP status to answer with: 503 while the model loads, when the admission
// gate (the daemon's memory floor) says no, or while stopping; 429 with Retry-After when the
// queue is full.
//
// Prefix reuse: the DS4 state (sliding-window ring, compressed rows, indexer rows, compressor
// frontiers) cannot be rewound to an arbitrary earlier token, so the live context is reused only
// when it is a prefix of the new prompt; only the suffix is prefilled and cached_tokens says how
// many tokens were reused. The match is by tokens first, then by bytes: when the model sampled a
// token spelling that the tokenizer would split differently, the live bytes can still be a byte
// prefix of the prompt; then the live tokens are kept and only the remaining text is tokenized
// (as ds4 does). Otherwise the context is cleared and the whole prompt prefilled. Snapshots are
// not used for reuse: a snapshot of the full model's context is large and the single-client
// pattern (the conversation grows turn by turn) is served by the live context alone.
// After a turn the live context holds prompt + every sampled token but the last (the last one is
// never fed: EOS is not part of the next prompt, and for other endings the next prompt
// re-renders it), so a client that sends the conversation back gets a prefix hit.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gateway/protocol/contract_store.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/metrics.hpp"

namespace ds4::serving {

struct ServiceConfig {
  size_t max_queued_jobs = 8;                   // waiting jobs, not counting the running one
  std::chrono::seconds retry_after{2};          // Retry-After on 429
  size_t prefill_chunk_tokens = 512;            // cancellation is checked between chunks
  size_t contract_store_bytes = protocol::ContractStore::kDefaultMaxBytes;
};

struct Refusal {
  int http_status = 503;
  std::string code;     // "loading", "queue_full", "memory_floor", "shutting_down", "load_failed"
  std::string message;
  std::chrono::seconds retry_after{0};  // 0: no Retry-After header
};

enum class ServiceState { loading, ready, failed, stopping };

class Service {
 public:
  // Returns a reason to refuse new work (for example "MemAvailable 3.1 GiB below floor 4 GiB").
  using AdmissionGate = std::function<std::optional<std::string>()>;

  Service(ServiceConfig config, Metrics& metrics);
  ~Service();  // stop(0)
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Model lifecycle, driven by the daemon while it loads.
  void set_load_progress(double fraction);
  void set_backend(std::shared_ptr<EngineBackend> backend);  // ready; starts the worker
  void set_load_failed(std::string reason);
  void set_admission_gate(AdmissionGate gate);

  ServiceState state() const;
  // Why the admission gate would refuse new work now (nullopt: it admits, or there is none).
  std::optional<std::string> admission_refusal() const;
  double load_progress() const;
  std::string failure() const;
  // Null until set_backend().
  std::shared_ptr<EngineBackend> backend() const;
  const ServiceConfig& config() const { return config_; }
  // The echo contracts of the turns this service generated (thread-safe). The chat endpoint
  // renders against it and records every finished turn into it.
  protocol::ContractStore& contracts() { return contracts_; }

  // Accepts the job (the sink will be called on the worker) or refuses it. Queued jobs whose
  // cancel flag is set are dropped first (their sinks hear `cancelled` on this thread), so
  // clients that left do not keep others out.
  std::optional<Refusal> submit(GenerationJob job);
  // Refuse new work, cancel queued jobs, give the running one `drain` to finish, then cancel it
  // and join the worker. Idempotent.
  void stop(std::chrono::milliseconds drain);

  size_t queued() const;
  // Tokens in the live context as of the last finished job (updated before its sink's
  // on_finished, so a caller woken by on_finished sees it).
  size_t live_tokens() const;

 private:
  struct Queued {
    GenerationJob job;
    std::chrono::steady_clock::time_point enqueued;
  };
  void worker_main();
  void run(Queued& q);
  void finish_unrun(Queued& q, FinishReason reason, std::string error = {});
  void publish_live_tokens();  // before the sink hears the end, so callers see the new state

  ServiceConfig config_;
  Metrics& metrics_;
  protocol::ContractStore contracts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Queued> queue_;
  ServiceState state_ = ServiceState::loading;
  double progress_ = 0;
  std::string failure_;
  AdmissionGate gate_;
  std::shared_ptr<EngineBackend> backend_;
  std::unique_ptr<EngineSequence> sequence_;  // worker only
  CancelFlag running_cancel_;                 // the running job's flag, for stop()
  bool running_ = false;
  size_t live_tokens_ = 0;
  bool stop_worker_ = false;
  std::thread worker_;
};

}  // namespace ds4::serving
