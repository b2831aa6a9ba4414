// Heap-driven byte-level BPE; the algorithm and its equivalence to the reference are described in
// bpe_merger.hpp.
#include "engine/tokenizer/bpe_merger.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "engine/tokenizer/byte_level.hpp"

namespace ds4::tokenizer {

void BpeMerger::PairTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    used_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty) put(s.key, s.value);
  }
}

void BpeMerger::PairTable::grow() { reserve(std::max<size_t>(slots_.size(), 8)); }

static inline size_t mix_pair_key(uint64_t key) {
  key ^= key >> 31;
  key *= 0x9e3779b97f4a7c15ULL;
  key ^= key >> 29;
  return static_cast<size_t>(key);
}

void BpeMerger::PairTable::put(uint64_t key, MergeResult value) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = mix_pair_key(key) & mask;; i = (i + 1) & mask) {
    if (slots_[i].key == key) {
      slots_[i].value = value;
      return;
    }
    if (slots_[i].key == kEmpty) {
      slots_[i] = Slot{key, value};
      ++used_;
      return;
    }
  }
}

const BpeMerger::MergeResult* BpeMerger::PairTable::find(uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = mix_pair_key(key) & mask;; i = (i + 1) & mask) {
    if (slots_[i].key == key) return &slots_[i].value;
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

int32_t BpeMerger::symbol_for(const std::string& vocab_string) {
  auto [it, inserted] = symbol_of_.try_emplace(vocab_string, 0);
  if (inserted) {
    it->second = n_vocab_ + static_cast<int32_t>(synthetic_strings_.size());
    synthetic_strings_.push_back(vocab_string);
  }
  return it->second;
}

BpeMerger::BpeMerger(std::span<const std::string> tokens, std::span<const std::string> merges) {
  n_vocab_ = static_cast<int32_t>(tokens.size());
  symbol_of_.reserve(tokens.size() + 256);
  for (size_t id = 0; id < tokens.size(); ++id) symbol_of_.insert_or_assign(tokens[id], static_cast<int32_t>(id));

  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    byte_symbol_[b] = symbol_for(s);
  }

  pairs_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    size_t space = m.find(' ');
    // Symbols never contain a literal space (it is "Ġ" in the byte alphabet), so a merge with an
    // empty half or a second space can never apply.
    if (space == std::string::npos || space == 0 || space + 1 == m.size() ||
        m.find(' ', space + 1) != std::string::npos) {
      ++malformed_merges_;
      continue;
    }
    std::string left = m.substr(0, space), right = m.substr(space + 1);
    int32_t l = symbol_for(left);
    int32_t r = symbol_for(right);
    int32_t merged = symbol_for(left + right);
    pairs_.put(pair_key(l, r), MergeResult{static_cast<int32_t>(rank), merged});
    ++merge_count_;
  }

  synthetic_ids_.resize(synthetic_strings_.size());
  for (size_t i = 0; i < synthetic_strings_.size(); ++i) {
    for (char c : synthetic_strings_[i]) {
      auto it = symbol_of_.find(std::string(1, c));
      if (it != symbol_of_.end() && it->second < n_vocab_) synthetic_ids_[i].push_back(it->second);
    }
  }
}

void BpeMerger::emit_symbol(int32_t symbol, std::vector<int32_t>& out) const {
  if (symbol < n_vocab_) {
    out.push_back(symbol);
    return;
  }
  const auto& ids = synthetic_ids_[static_cast<size_t>(symbol - n_vocab_)];
  out.insert(out.end(), ids.begin(), ids.end());
}

void BpeMerger::encode_piece(std::string_view raw, std::vector<int32_t>& out) const {
  const size_t n = raw.size();
  if (n == 0) return;
  if (n == 1) {
    emit_symbol(byte_symbol_[static_cast<uint8_t>(raw[0])], out);
    return;
  }

  // Doubly linked list of live symbols; node i starts at byte i of the piece.
  struct Node {
    int32_t symbol;
    int32_t prev;  // -1: none
    int32_t next;  // -1: none
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // node index of the left symbol
    int32_t left_symbol;
    int32_t right_symbol;
    int32_t merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  // Scratch reused across calls on the same thread; encode is const and may run concurrently.
  thread_local std::vector<Node> nodes;
  thread_local std::vector<Candidate> heap;  // min-heap via std::greater
  nodes.resize(n);
  heap.clear();
  const std::greater<> later;

  for (size_t i = 0; i < n; ++i)
    nodes[i] = Node{byte_symbol_[static_cast<uint8_t>(raw[i])], static_cast<int32_t>(i) - 1,
                    i + 1 < n ? static_cast<int32_t>(i + 1) : -1};

  auto consider = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = nodes[left].next;
    if (right < 0) return;
    const MergeResult* m = pairs_.find(pair_key(nodes[left].symbol, nodes[right].symbol));
    if (!m) return;
    heap.push_back(Candidate{m->rank, left, nodes[left].symbol, nodes[right].symbol, m->symbol});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(n); ++i) consider(i);

  constexpr int32_t kDead = std::numeric_limits<int32_t>::min();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Candidate c = heap.back();
    heap.pop_back();
    Node& left = nodes[c.left];
    if (left.symbol != c.left_symbol || left.next < 0) continue;
    Node& right = nodes[left.next];
    if (right.symbol != c.right_symbol) continue;
    // Merge right into left.
    left.symbol = c.merged;
    right.symbol = kDead;
    left.next = right.next;
    if (left.next >= 0) nodes[left.next].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }

  for (int32_t i = 0; i >= 0; i = nodes[i].next) emit_symbol(nodes[i].symbol, out);
}

}  // namespace ds4::tokenizer
