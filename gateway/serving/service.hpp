#pragma once
// Service: the one engine worker, its bounded job queue, and the model's lifecycle.
//
// One thread owns the live EngineSequence and runs jobs one at a time, in arrival order. HTTP
// threads submit jobs and get back either nothing (accepted; the sink will hear the rest) or a
// Refusal carrying the HTTP status to answer with: 503 while the model loads, when the admission
// gate (the daemon's memory floor) says no, or while stopping; 429 with Retry-After when the
// queue is full.
//
// Prefix reuse (prefix_reuse.cpp): a prompt reuses the longest token prefix it shares with a
// restore point, and only the rest is prefilled. Restore points are, in order of preference:
//   live  the live context, extended, or taken back with truncate() to the first differing
//         token when that is within the engine's rollback rings;
//   warm  a snapshot in RAM (HotStore, cache.hot_bytes): one a couple of tokens before the end
//         of every rendered prompt (before the reply's opening, which history re-renders
//         differently) and one at the end of every assistant turn, so regenerated turns, edited
//         last messages, replies cut by max_tokens and interleaved conversations (A, B, A) go
//         back to their own prefix;
//   disk  a KV checkpoint file (DiskStore, cache.dir): written at the end of a cold prompt,
//         every checkpoint_interval_tokens of a long prefill, when a warm session is evicted
//         from RAM and at shutdown; found again after a restart.
// The one with the most reusable tokens wins (ties: live, then warm, then disk). The DS4 state
// (sliding-window ring, compressed rows, indexer rows, compressor frontiers) cannot be rewound
// to an arbitrary token, which is why the snapshots exist; restore + continue is bit-identical
// to a cold prefill of the same tokens (tests/gateway). When the live context is about to be
// replaced it is first kept as a warm session (or a disk checkpoint), sparing the restore point
// that is about to be used. A checkpoint that restores but then fails in the engine is deleted
// and the request falls back to a cold prefill.
// The match is by tokens first, then by bytes: when the model sampled a token spelling that the
// tokenizer would split differently, the live bytes (or a warm or disk turn end's) can still be
// a byte prefix of the prompt; then those tokens are kept and only the remaining text is
// tokenized (as ds4 does).
// After a turn the live context holds prompt + every sampled token but the last (the last one is
// never fed: EOS is not part of the next prompt, and for other endings the next prompt
// re-renders it), so a client that sends the conversation back gets a prefix hit.
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

#include "gateway/cache/disk_store.hpp"
#include "gateway/cache/hot_store.hpp"
#include "gateway/protocol/contract_store.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/metrics.hpp"

namespace ds4::serving {

class JobRunner;

struct ServiceConfig {
  size_t max_queued_jobs = 8;           // waiting jobs, not counting the running one
  std::chrono::seconds retry_after{2};  // Retry-After on 429
  size_t prefill_chunk_tokens = 512;    // cancellation is checked between chunks
  size_t contract_store_bytes = protocol::ContractStore::kDefaultMaxBytes;
  std::chrono::milliseconds queue_keepalive{5000};  // how often waiting jobs hear their position
  // Prefix cache (see above). 0 bytes or an empty dir turn that level off.
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
  std::string code;  // "loading", "queue_full", "memory_floor", "shutting_down", "load_failed"
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
  // Empty when the disk checkpoint store is fine (or off); otherwise what is wrong with it.
  std::string cache_health() const;
  // Warm sessions held in RAM and their bytes; disk checkpoint files and their bytes.
  struct CacheStats {
    size_t warm_sessions = 0, disk_files = 0;
    uint64_t warm_bytes = 0, disk_bytes = 0;
  };
  CacheStats cache_stats() const;

 private:
  struct Queued {
    GenerationJob job;
    std::chrono::steady_clock::time_point enqueued;
  };
  struct Turn;  // one job's run: service_turn.cpp
  struct Restored {
    std::vector<Token> tokens;  // of the warm session or checkpoint the sequence was restored from
    std::string disk_name;      // when it came from disk
  };
  void worker_main();
  void ticker_main();  // tells queued jobs their position every queue_keepalive
  void run(Queued& q);
  // The named steps of run().
  void check_prompt(const GenerationJob& job) const;
  void reuse_prefix(GenerationJob& job, GenerationUsage& usage);  // prefix_reuse.cpp
  void match_restore_points_by_bytes(GenerationJob& job);         // prefix_reuse.cpp
  // Prefills the prompt after the reused prefix, keeping the prompt's restore point on the way.
  bool prefill_rest(Turn& turn);  // false: interrupted
  void decode_turn(Turn& turn);
  // Snapshots the live context as a warm session (not for `interval`) and, with to_disk, as a
  // disk checkpoint.
  void keep_restore_point(cache::CheckpointReason reason, bool to_disk);  // prefix_reuse.cpp
  void forget_failed_restore();                                           // prefix_reuse.cpp
  void save_live_before_switch(std::span<const Token> protect, const std::string& protect_name);
  void store_on_disk(cache::CheckpointReason reason, std::vector<Token> tokens, std::vector<uint8_t> state,
                     std::span<const std::string> keep = {});
  void spill(std::vector<cache::HotEntry> evicted, std::span<const std::string> keep);
  void write_shutdown_checkpoints();
  void account(Turn& turn);
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
  // Prefix cache; both worker-only except the disk store's thread-safe health and counts.
  cache::HotStore hot_;
  std::unique_ptr<cache::DiskStore> disk_;
  std::vector<Token> live_saved_;     // live tokens already kept as a restore point
  std::string live_session_;          // the session hint of the job the live context is from
  std::optional<Restored> restored_;  // what the live context was last restored from
  uint64_t hot_bytes_published_ = 0;
  size_t hot_sessions_published_ = 0;
  bool stop_worker_ = false;
  std::thread worker_;
  std::condition_variable ticker_cv_;
  std::thread ticker_;
};

}  // namespace ds4::serving
