#pragma once
// Byte-level BPE over one pre-tokenized piece.
//
// A piece starts as one symbol per byte. The merger repeatedly merges the adjacent pair with the
// lowest merge rank, the leftmost such pair on ties, until no adjacent pair has a rank; each final
// symbol is then emitted as its token id. That is the reference algorithm; doing it by rescanning
// the piece after every merge is quadratic, which matters for long runs (a 100 kB line of letters
// or spaces is one piece), so this implementation keeps the live pairs in a min-heap ordered by
// (rank, position) over a doubly linked symbol list. Stale heap entries are recognised by checking
// that both symbols are still the ones the entry was made for. The order of merges, and therefore
// the result, is the same as the rescanning version.
//
// Symbols are identified by their vocabulary string. Every string that can arise (the 256 byte
// symbols, both halves and the result of every merge) gets a symbol id: its token id when the
// string is in the vocabulary, otherwise a synthetic id past the vocabulary. A final symbol with a
// synthetic id is emitted the way the reference does it: each single byte of its vocabulary string
// is looked up as a one-byte token and emitted if found, dropped if not. With a consistent
// vocabulary (every merge result is a token, every byte has a token) that never happens.
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
