// Warm sessions in RAM. See hot_store.hpp.
#include "gateway/cache/hot_store.hpp"

#include <algorithm>

#include "gateway/cache/token_prefix.hpp"

namespace ds4::cache {

std::optional<size_t> HotStore::index_of(std::span<const Token> tokens) const {
  for (size_t i = 0; i < entries_.size(); i++)
    if (entries_[i].tokens.size() == tokens.size() &&
        std::equal(tokens.begin(), tokens.end(), entries_[i].tokens.begin()))
      return i;
  return std::nullopt;
}

bool HotStore::superseded(size_t index) const {
  const HotEntry& e = entries_[index];
  if (e.session.empty()) return false;
  int newer = 0;
  for (size_t j = 0; j < entries_.size() && newer < 2; j++) {
    const HotEntry& f = entries_[j];
    if (j != index && f.session == e.session && f.tokens.size() > e.tokens.size() &&
        std::equal(e.tokens.begin(), e.tokens.end(), f.tokens.begin()))
      ++newer;
  }
  return newer >= 2;
}

bool HotStore::contains(std::span<const Token> tokens) const { return index_of(tokens).has_value(); }

std::vector<HotEntry> HotStore::insert(HotEntry entry, std::span<const Token> protect) {
  std::vector<HotEntry> evicted;
  if (auto i = index_of(entry.tokens)) {
    entry.hits = std::max(entry.hits, entries_[*i].hits);
    entry.on_disk = entry.on_disk || entries_[*i].on_disk;
    if (entry.session.empty()) entry.session = entries_[*i].session;
    bytes_ -= entries_[*i].bytes();
    entries_.erase(entries_.begin() + std::ptrdiff_t(*i));
  }
  if (entry.bytes() > budget_) {
    evicted.push_back(std::move(entry));
    return evicted;
  }
  bytes_ += entry.bytes();
  entries_.push_back(std::move(entry));
  const size_t newest = entries_.size() - 1;
  while (bytes_ > budget_) {
    const auto now = std::chrono::steady_clock::now();
    std::optional<size_t> victim;
    double victim_value = 0;
    bool victim_superseded = false;
    for (size_t i = 0; i < entries_.size(); i++) {
      const HotEntry& e = entries_[i];
      if (i == newest || (!protect.empty() && e.tokens.size() == protect.size() &&
                          std::equal(protect.begin(), protect.end(), e.tokens.begin())))
        continue;
      const double age = std::chrono::duration<double>(now - e.last_used).count();
      const double v = checkpoint_value(e.hits, age, half_life_, e.tokens.size(), e.bytes());
      const bool old = superseded(i);
      if (!victim || (old && !victim_superseded) ||
          (old == victim_superseded &&
           (v < victim_value || (v == victim_value && e.last_used < entries_[*victim].last_used)))) {
        victim = i;
        victim_value = v;
        victim_superseded = old;
      }
    }
    if (!victim) break;  // only protected entries left (they fit on their own)
    bytes_ -= entries_[*victim].bytes();
    evicted.push_back(std::move(entries_[*victim]));
    entries_.erase(entries_.begin() + std::ptrdiff_t(*victim));
  }
  return evicted;
}

std::optional<size_t> HotStore::find(std::span<const Token> prompt, size_t max_tokens) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < entries_.size(); i++) {
    const auto& t = entries_[i].tokens;
    if (t.size() > max_tokens || !is_prefix<Token>(t, prompt)) continue;
    if (!best || t.size() > entries_[*best].tokens.size()) best = i;
  }
  return best;
}

std::optional<size_t> HotStore::find_longest_if(size_t longer_than,
                                                const std::function<bool(std::span<const Token>)>& usable) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < entries_.size(); i++) {
    const size_t n = entries_[i].tokens.size();
    if (n <= longer_than || (best && n <= entries_[*best].tokens.size())) continue;
    if (usable(entries_[i].tokens)) best = i;
  }
  return best;
}

const HotEntry& HotStore::use(size_t index) {
  HotEntry& e = entries_.at(index);
  e.hits += 1;
  e.last_used = std::chrono::steady_clock::now();
  return e;
}

void HotStore::mark_on_disk(std::span<const Token> tokens) {
  if (auto i = index_of(tokens)) entries_[*i].on_disk = true;
}

void HotStore::erase(std::span<const Token> tokens) {
  if (auto i = index_of(tokens)) {
    bytes_ -= entries_[*i].bytes();
    entries_.erase(entries_.begin() + std::ptrdiff_t(*i));
  }
}

std::vector<HotEntry> HotStore::drain() {
  std::vector<HotEntry> out = std::move(entries_);
  entries_.clear();
  bytes_ = 0;
  return out;
}

}  // namespace ds4::cache
