#pragma once
// HotStore: warm sessions in RAM. Each entry is one restore point: the exact tokens and the
// engine state after them (EngineSequence::snapshot()). Restoring an entry costs a copy of its
// state, not a prefill; that is what makes switching between interleaved conversations cheap.
//
// Bounded by bytes (cache.hot_bytes). Inserting evicts the least valuable entries (see
// checkpoint_value) and hands them back, so the caller can write them to disk; an entry that is
// protected (the one about to be restored) is never evicted. Entries may carry the client's
// session key; superseded entries go first (docs/kv-checkpoints.md §session-hints). Not
// thread-safe: the engine worker owns it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gateway/cache/checkpoint_file.hpp"

namespace ds4::cache {

struct HotEntry {
  std::vector<Token> tokens;
  std::vector<uint8_t> state;
  CheckpointReason reason = CheckpointReason::Turn;
  bool on_disk = false;  // a disk checkpoint of exactly these tokens exists
  std::string session;   // the client's session hint; empty: none
  double hits = 0;
  std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();
  uint64_t bytes() const { return state.size() + tokens.size() * sizeof(Token); }
};

class HotStore {
 public:
  explicit HotStore(uint64_t budget_bytes, double half_life_seconds = 6 * 3600.0)
      : budget_(budget_bytes), half_life_(half_life_seconds) {}

  // Adds (or replaces the entry with the same tokens). Returns the entries evicted to stay
  // within the budget, the new one included when it alone is larger than the budget.
  // `protect`: tokens of an entry that must stay.
  std::vector<HotEntry> insert(HotEntry entry, std::span<const Token> protect = {});
  // Index of the longest entry whose tokens are a prefix of `prompt` and no longer than
  // `max_tokens`; nullopt when none.
  std::optional<size_t> find(std::span<const Token> prompt, size_t max_tokens) const;
  // Index of the longest entry with more than `longer_than` tokens for which usable(tokens)
  // holds (the serving layer's match by bytes); nullopt when none.
  std::optional<size_t> find_longest_if(size_t longer_than,
                                        const std::function<bool(std::span<const Token>)>& usable) const;
  // Marks a use (hits, recency) and returns the entry.
  const HotEntry& use(size_t index);
  const HotEntry& at(size_t index) const { return entries_[index]; }
  bool contains(std::span<const Token> tokens) const;
  void mark_on_disk(std::span<const Token> tokens);
  void erase(std::span<const Token> tokens);
  // Removes and returns every entry (shutdown writes them to disk).
  std::vector<HotEntry> drain();

  size_t size() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t budget() const { return budget_; }

 private:
  std::optional<size_t> index_of(std::span<const Token> tokens) const;
  bool superseded(size_t index) const;
  uint64_t budget_;
  double half_life_;
  uint64_t bytes_ = 0;
  std::vector<HotEntry> entries_;
};

}  // namespace ds4::cache
