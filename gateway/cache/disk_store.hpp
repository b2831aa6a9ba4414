#pragma once
// DiskStore: KV checkpoints in a directory (cache.dir), found again by longest token prefix.
//
// The directory is the truth: the index is rebuilt from it at start, and bad files are removed,
// never loaded. A disk budget (cache.disk_bytes) and the filesystem's free space bound the writes.
// Failure is not fatal: a failing directory is logged once per change of state, counted, shown in
// health(), and serving goes on. Thread-safe (one mutex; the engine worker writes, HTTP threads
// read health and statistics). Checks, eviction, free-space margin and failure states:
// docs/kv-checkpoints.md §checks, §restore-points-and-the-choice, §when-the-directory-fails.
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
