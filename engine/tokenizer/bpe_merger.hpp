#pragma once
// Byte-level BPE over one pre-tokenized piece: the reference algorithm (merge the lowest-ranked
// adjacent pair, leftmost on ties, until none has a rank) with the live pairs in a min-heap over a
// linked symbol list, so long pieces are not quadratic; the result is the same as rescanning.
// Symbol ids, synthetic ids and how a final symbol outside the vocabulary is emitted:
// docs/engine.md §bpe-merges.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ds4::tokenizer {

class BpeMerger {
 public:
  // `tokens`: vocabulary strings by id (byte-level alphabet). `merges`: "left right" strings in
  // rank order (rank = index). A token string that appears twice resolves to its last id, and a
  // merge listed twice keeps its last rank, as a hash table that overwrites on insert would.
  BpeMerger(std::span<const std::string> tokens, std::span<const std::string> merges);

  // Appends the ids for one piece of raw bytes to `out`.
  void encode_piece(std::string_view raw_piece, std::vector<int32_t>& out) const;

  size_t merge_count() const { return merge_count_; }
  // Merges skipped at load because they were not of the form "left right".
  size_t malformed_merge_count() const { return malformed_merges_; }

 private:
  struct MergeResult {
    int32_t rank;
    int32_t symbol;
  };
  // Flat open-addressing map from a (left, right) symbol pair to its merge.
  class PairTable {
   public:
    void reserve(size_t n);
    void put(uint64_t key, MergeResult value);
    const MergeResult* find(uint64_t key) const;

   private:
    struct Slot {
      uint64_t key = kEmpty;
      MergeResult value{};
    };
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    void grow();
    std::vector<Slot> slots_;
    size_t used_ = 0;
  };

  static uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  int32_t symbol_for(const std::string& vocab_string);
  void emit_symbol(int32_t symbol, std::vector<int32_t>& out) const;

  int32_t n_vocab_ = 0;
  std::unordered_map<std::string, int32_t> symbol_of_;
  std::vector<std::string> synthetic_strings_;       // symbol n_vocab_ + i
  std::vector<std::vector<int32_t>> synthetic_ids_;  // what a synthetic symbol emits
  int32_t byte_symbol_[256] = {};
  PairTable pairs_;
  size_t merge_count_ = 0;
  size_t malformed_merges_ = 0;
};

}  // namespace ds4::tokenizer
