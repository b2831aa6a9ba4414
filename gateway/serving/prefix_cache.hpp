#pragma once
// PrefixCache: the restore points of the live engine context and the choice between them.
//
// A prompt reuses the longest token prefix it shares with a restore point (live context, warm
// snapshot in RAM, disk checkpoint), and only the rest is prefilled. The one with the most
// reusable tokens wins (ties: live, then warm, then disk); the match is by tokens first, then by
// bytes. Where each point comes from and what is bit-identical to what:
// docs/kv-checkpoints.md §restore-points-and-the-choice.
//
// Threading: open() runs once before the engine worker starts. The other calls are thread-safe
// (one at a time): each running session's thread passes its own live sequence, and every live
// sequence has its own bookkeeping (what of it is kept, its session hint, what it was restored
// from); warm sessions and disk checkpoints are shared by all.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/cache/disk_store.hpp"
#include "gateway/cache/hot_store.hpp"
#include "gateway/protocol/contract_store.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/metrics.hpp"

namespace ds4::serving {

struct PrefixCacheConfig {
  // 0 bytes or an empty dir turn that level off.
  uint64_t hot_bytes = 0;              // warm sessions in RAM
  std::filesystem::path cache_dir;     // disk KV checkpoints
  uint64_t disk_bytes = 0;             // disk budget for them
  size_t checkpoint_min_tokens = 256;  // shorter contexts get no snapshot/checkpoint
};

class PrefixCache {
 public:
  // Warm sessions held in RAM and their bytes; disk checkpoint files and their bytes.
  struct Stats {
    size_t warm_sessions = 0, disk_files = 0;
    uint64_t warm_bytes = 0, disk_bytes = 0;
  };

  // `contracts` travel with disk checkpoints (only those of the turns inside their tokens).
  PrefixCache(PrefixCacheConfig config, Metrics& metrics, protocol::ContractStore& contracts);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Indexes the checkpoint directory for this model and merges the checkpoints' contract records
  // (requests render against them before the worker restores anything). Once; the backend must
  // outlive the cache.
  void open(const EngineBackend& backend);

  // Makes `seq` hold the best restore point for job.prompt (which a match by bytes may
  // re-tokenize after the point) and says in usage.cache / usage.cached_tokens what was reused.
  // The live context is kept as a restore point first when it is about to be replaced.
  void reuse(EngineSequence& seq, GenerationJob& job, GenerationUsage& usage);
  // Restore points kept of `seq` from now on belong to this client session hint.
  void set_session(const EngineSequence& seq, std::string session);
  // Snapshots the live context as a warm session (not for `interval`) and, with to_disk, as a
  // disk checkpoint.
  void keep(const EngineSequence& seq, cache::CheckpointReason reason, bool to_disk);
  // Tokens of the warm session or checkpoint `seq` was last restored from.
  std::optional<size_t> restored_tokens(const EngineSequence& seq) const;
  // The restored point failed in the engine: it is deleted (RAM and disk) and `seq` cleared.
  void drop_failed_restore(EngineSequence& seq);
  // The live context is in an unknown state: `seq` is cleared and nothing of it counts as kept.
  void clear_live(EngineSequence& seq);
  // Stopping: the live contexts and every warm session not on disk yet become disk checkpoints.
  void write_shutdown_checkpoints(std::span<const EngineSequence* const> live);
  // Publishes the counts to the metrics and to stats().
  void publish();

  // Thread-safe. Empty when the disk store is fine (or off); otherwise what is wrong with it.
  std::string health() const;
  Stats stats() const;

 private:
  struct Restored {
    std::vector<Token> tokens;  // of the warm session or checkpoint the sequence was restored from
    std::string disk_name;      // when it came from disk
  };
  // One live sequence's bookkeeping.
  struct Live {
    std::vector<Token> saved;          // its tokens already kept as a restore point
    std::string session;               // the session hint of the job it is from
    std::optional<Restored> restored;  // what it was last restored from
  };
  Live& live_of(const EngineSequence& seq) { return live_[&seq]; }
  bool disk_on() const { return disk_ && disk_->enabled(); }
  void match_restore_points_by_bytes(const EngineSequence& seq, GenerationJob& job);
  bool restore_warm(EngineSequence& seq, size_t index, std::span<const Token> prompt, GenerationUsage& usage);
  bool restore_disk(EngineSequence& seq, const cache::DiskMatch& match, const GenerationJob& job,
                    GenerationUsage& usage);
  void save_live_before_switch(const EngineSequence& seq, std::span<const Token> protect,
                               const std::string& protect_name);
  void store_on_disk(cache::CheckpointReason reason, std::vector<Token> tokens, std::vector<uint8_t> state,
                     std::span<const std::string> keep = {});
  // Evicted warm sessions not on disk yet become disk checkpoints.
  void spill(std::vector<cache::HotEntry> evicted, std::span<const std::string> keep);

  PrefixCacheConfig config_;
  Metrics& metrics_;
  protocol::ContractStore& contracts_;
  const EngineBackend* backend_ = nullptr;
  cache::HotStore hot_;
  std::unique_ptr<cache::DiskStore> disk_;  // set by open(); its health and counts are thread-safe
  std::map<const EngineSequence*, Live> live_;
  mutable std::mutex work_mu_;  // one public call at a time (see the threading note)
  mutable std::mutex mu_;       // guards disk_ (the pointer) and the published counts
  uint64_t hot_bytes_published_ = 0;
  size_t hot_sessions_published_ = 0;
};

}  // namespace ds4::serving
