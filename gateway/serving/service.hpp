#pragma once
// Service: the engine worker's sessions, its bounded job queue, and the model's lifecycle.
//
// Concurrency model: max_batch slots, each a thread with its own live EngineSequence, run jobs
// at once; their tokens meet in the StepBatcher (step_batcher.hpp), which runs them together in
// one engine step, so every session's output is what it would be alone. Jobs are admitted in
// arrival order to the free slot whose live tokens share the longest prefix with the prompt.
// HTTP threads submit jobs and get back either nothing (accepted; the sink will hear the rest)
// or a Refusal carrying the HTTP status: 503 while the model loads, when the admission gate (the
// daemon's memory floor) says no, or while stopping; 429 with Retry-After when the queue is
// full. Prefix reuse is the PrefixCache's (docs/kv-checkpoints.md §restore-points-and-the-choice);
// scheduling: docs/batching.md §scheduler.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway/protocol/contract_store.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/prefix_cache.hpp"
#include "gateway/serving/step_batcher.hpp"

namespace ds4::serving {

class JobRunner;

struct ServiceConfig {
  size_t max_queued_jobs = 8;           // waiting jobs, not counting the running one
  size_t max_batch = 1;                 // sessions decoded together in one step (live contexts)
  std::chrono::seconds retry_after{2};  // Retry-After on 429
  size_t prefill_chunk_tokens = 512;    // cancellation is checked between chunks
  // Prefill tokens one step takes while other sessions decode in it (step_batcher.hpp).
  size_t prefill_tokens_beside_decode = 64;
  // Within that, a step with prefill beside decode rows may take this many times a decode-only
  // step (step_batcher.hpp): what a prompt arriving costs the running sessions' next token.
  double prefill_latency_ratio = 3.0;
  // The least a step waits for a running session still sampling (step_batcher.hpp).
  std::chrono::microseconds step_min_grace{200};
  size_t contract_store_bytes = protocol::ContractStore::kDefaultMaxBytes;
  std::chrono::milliseconds queue_keepalive{5000};  // how often waiting jobs hear their position
  // Prefix cache (prefix_cache.hpp). 0 bytes or an empty dir turn that level off.
  uint64_t hot_bytes = 0;                     // warm sessions in RAM
  std::filesystem::path cache_dir;            // disk KV checkpoints
  uint64_t disk_bytes = 0;                    // disk budget for them
  size_t checkpoint_min_tokens = 256;         // shorter prompts get no snapshot/checkpoint
  size_t checkpoint_interval_tokens = 16384;  // long prefills write a checkpoint this often
  // The prompt's restore point sits this many tokens before the prompt's end: the end of a
  // rendered prompt opens the reply (<｜Assistant｜><think>), which the next prompt re-renders
  // differently when the turn lands in history (</think> when reasoning is dropped, a cut reply),
  // and a restored context cannot truncate behind its restore point.
  size_t prompt_point_margin_tokens = 2;
  // Exact speculative decoding (speculator.hpp): the drafter (null: none) and the most drafts
  // one step verifies (0: none). Used by the worker thread only.
  std::shared_ptr<Drafter> drafter;
  size_t speculation_k = 0;
  // Gateway mode (docs/scale-out.md): jobs run on upstream engines instead of a local worker;
  // the backend then only tokenizes. Null: the local worker runs them.
  std::shared_ptr<JobRunner> remote;
};

struct Refusal {
  int http_status = 503;
  std::string code;  // "loading", "queue_full", "memory_floor", "shutting_down", "load_failed", "engine_lost"
  std::string message;
  std::chrono::seconds retry_after{0};  // 0: no Retry-After header
};

// Runs jobs somewhere else (gateway/upstream/upstream_pool.hpp): the same contract as
// Service::submit (the sink hears the rest, exactly one on_finished) on the runner's threads.
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  virtual std::optional<Refusal> submit(GenerationJob job) = 0;
  // Refuse new jobs, give running ones `drain`, then cancel them and wait for their ends.
  virtual void stop(std::chrono::milliseconds drain) = 0;
  // Whether any engine can take a job now (/health is 503 when none can), and a JSON array
  // describing each one for /health.
  virtual bool available() const = 0;
  virtual std::string status_json() const = 0;
};

enum class ServiceState { Loading, Ready, Failed, Stopping };

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
  // True once a turn hit EngineLost (engine_backend.hpp): the service is Failed, refuses new work
  // (503 engine_lost, failure() says why) and the daemon exits to be restarted.
  bool engine_lost() const;

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
  // Jobs running now (at most max_batch).
  size_t running() const;
  // Tokens in the live context of the last finished job (updated before its sink's
  // on_finished, so a caller woken by on_finished sees it).
  size_t live_tokens() const;
  // Empty when the disk checkpoint store is fine (or off); otherwise what is wrong with it.
  std::string cache_health() const;
  // Warm sessions held in RAM and their bytes; disk checkpoint files and their bytes.
  using CacheStats = PrefixCache::Stats;
  CacheStats cache_stats() const;

 private:
  struct Queued {
    GenerationJob job;
    std::chrono::steady_clock::time_point enqueued;
  };
  struct Slot;  // one session's thread and live sequence: service.cpp
  struct Turn;  // one job's run: service_turn.cpp
  void slot_main(Slot& slot);
  void ticker_main();                 // tells queued jobs their position every queue_keepalive
  void dispatch_locked();             // hands queued jobs to free slots; mu_ held
  bool slot_starting_locked() const;  // a slot's thread has not made its sequence yet; mu_ held
  void run(Queued& q, BatchedSequence& seq);
  // The named steps of run().
  void check_prompt(const GenerationJob& job, const EngineSequence& seq) const;
  // Prefills the prompt after the reused prefix, keeping the prompt's restore point on the way.
  bool prefill_rest(Turn& turn);  // false: interrupted
  void decode_turn(Turn& turn);
  void account(Turn& turn);
  void finish_unrun(Queued& q, FinishReason reason, std::string error = {});
  // Before the sink hears the end, so callers see the new state.
  void publish_live_tokens(const EngineSequence& seq);

  ServiceConfig config_;
  Metrics& metrics_;
  protocol::ContractStore contracts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Queued> queue_;
  ServiceState state_ = ServiceState::Loading;
  double progress_ = 0;
  std::string failure_;
  bool engine_lost_ = false;
  AdmissionGate gate_;
  std::shared_ptr<EngineBackend> backend_;
  std::unique_ptr<StepBatcher> batcher_;
  std::vector<std::unique_ptr<Slot>> slots_;  // the vector under mu_; each slot's sequence its thread's
  size_t running_ = 0;                        // slots holding a job
  uint64_t slot_clock_ = 0;                   // orders slots by last use
  size_t live_tokens_ = 0;
  PrefixCache cache_;           // thread-safe (prefix_cache.hpp)
  std::mutex finishing_mu_;     // a turn's on_finished and the placing of its contract records
  std::mutex new_sequence_mu_;  // the slots' calls of EngineBackend::new_sequence, one at a time
  bool stop_worker_ = false;
  std::condition_variable ticker_cv_;
  std::thread ticker_;
};

}  // namespace ds4::serving
