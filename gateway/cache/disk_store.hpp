#pragma once
// DiskStore: KV checkpoints in a directory (cache.dir), found again by longest token prefix.
//
// The directory is the truth: at start the index is rebuilt from the files in it (header and
// tokens of each, checked); stale temp files of an interrupted write are deleted; files that are
// corrupt, truncated, of another model or of an old format version are skipped with one warning
// and removed, never loaded. The directory is created 0700 and file names are hashes
// (checkpoint_file_name), so nothing a client sent becomes a path.
//
// A disk budget (cache.disk_bytes) is kept by evicting the least valuable checkpoints (hits with
// a half-life decay, tokens saved per byte, recency); the checkpoint just written and any the
// caller names (the one prefixing the request being served) are never evicted for it.
//
// Before a write the filesystem's free space (statvfs) is compared with the file's size plus a
// margin (free_margin_bytes, so the checkpoints never take a disk's last bytes from the rest of
// the system); a file that would not fit is not started (reason "no_space"): no bytes are written
// and none are evicted for it.
//
// Failure is not fatal: when the directory is missing and cannot be created, is read-only or the
// disk is full, the store logs one error per change of state (ok -> failing, failing -> ok, or
// one failure kind -> another; never once per failed file), counts every rejection (metrics:
// ds4d_kv_checkpoint_events_total{event="reject"}), reports the latest reason in health() and
// the daemon keeps serving without (or with fewer) checkpoints. A missing directory is retried
// at the next write. Thread-safe (one mutex; the engine worker writes, HTTP
// threads read health and statistics).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/cache/checkpoint_file.hpp"

namespace ds4::cache {

struct DiskStoreConfig {
  std::filesystem::path dir;  // empty: no disk checkpoints
  uint64_t budget_bytes = 0;  // 0: no disk checkpoints
  uint64_t model_fingerprint = 0;
  double hit_half_life_seconds = 6 * 3600.0;
  // Free bytes on the filesystem holding `dir`, nullopt when unknown (then the write is tried).
  // Empty: statvfs (f_bavail × f_frsize). Tests inject their own reading.
  std::function<std::optional<uint64_t>(const std::filesystem::path&)> free_bytes;
  uint64_t free_margin_bytes = 64ull << 20;  // left free after every checkpoint write
};

// What happened, for metrics: event is "write", "read", "evict", "reject" or "remove"; reason
// says why for the last three ("budget", "corrupt", "foreign_model", "old_version",
// "write_failed", "disk_full", "read_only", "no_space", "too_large", "load_failed", ...).
using DiskEventFn = std::function<void(std::string_view event, std::string_view reason, uint64_t bytes)>;

struct DiskMatch {
  std::string name;
  size_t tokens = 0;
};

class DiskStore {
 public:
  explicit DiskStore(DiskStoreConfig config, DiskEventFn on_event = {});

  bool enabled() const { return !config_.dir.empty() && config_.budget_bytes > 0 && config_.model_fingerprint != 0; }
  // Empty when fine; otherwise what is wrong ("directory /x is read-only: ...").
  std::string health() const;

  // The longest checkpoint whose tokens are a prefix of `prompt` with at most `max_tokens`.
  std::optional<DiskMatch> find(std::span<const Token> prompt, size_t max_tokens) const;
  // The tokens of the longest checkpoint with more than `longer_than` tokens for which
  // usable(tokens) holds (the serving layer's match by bytes); nullopt when none. `usable` runs
  // under the store's lock: it must not call back into the store.
  std::optional<std::vector<Token>> longest_tokens_if(size_t longer_than,
                                                      const std::function<bool(std::span<const Token>)>& usable) const;
  // Reads and checks the whole file; a bad one is removed (with one warning) and nullopt
  // returned. A hit counts for eviction value; the file stays (it can be loaded any number of
  // times).
  std::optional<Checkpoint> load(const std::string& name);
  // Writes a checkpoint (replacing one of the same tokens), then evicts to the budget sparing it
  // and `keep`. Returns the file name, or nullopt when not written (reason logged and counted).
  std::optional<std::string> store(const Checkpoint& checkpoint, std::span<const std::string> keep = {});
  bool contains(std::span<const Token> tokens) const;
  // Deletes a checkpoint (for example one that loaded but then failed in the engine).
  void remove(const std::string& name, std::string_view reason);

  // Calls fn with the contract records of every checkpoint, least recently used first (so the
  // newest records win when merged in order). Unreadable sections are skipped.
  void for_each_contracts(const std::function<void(const std::string&)>& fn) const;

  size_t files() const;
  uint64_t bytes() const;
  const DiskStoreConfig& config() const { return config_; }

  // Test hook: called after half of each file's bytes are written (kill -9 fault test).
  void (*after_partial_write)() = nullptr;

 private:
  struct Entry {
    std::vector<Token> tokens;
    uint64_t bytes = 0;
    double hits = 0;
    double last_used_unix = 0;
  };
  bool ensure_dir_locked();
  void rebuild_index_locked();
  // `state` is the failure kind ("" when fine): a change of it is logged, `problem` (the latest
  // failure's text, with paths) is what health() says.
  void set_health_locked(std::string_view state, std::string problem);
  void evict_locked(const std::string& written, std::span<const std::string> keep);
  void remove_locked(const std::string& name, std::string_view event, std::string_view reason);
  void emit(std::string_view event, std::string_view reason, uint64_t bytes) const;

  DiskStoreConfig config_;
  DiskEventFn on_event_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> index_;
  uint64_t bytes_ = 0;
  bool dir_ready_ = false;
  std::string health_;
  std::string health_state_;  // "" or the failure kind last logged
};

}  // namespace ds4::cache
