// Prompt-lookup drafting; see drafter.hpp and docs/speculation.md §drafters.
#include <algorithm>

#include "gateway/serving/drafter.hpp"

namespace ds4::serving {

std::vector<Token> ngram_draft(std::span<const Token> history, size_t k) {
  const size_t n = history.size();
  if (k == 0) return {};
  for (size_t len = std::min(kNgramMax, n > 0 ? n - 1 : 0); len >= kNgramMin; --len) {
    const std::span<const Token> suffix = history.subspan(n - len);
    // Latest earlier occurrence first: recent text is what agents rewrite. The match must end
    // before the history does, so at least one token follows it; one that is followed by fewer
    // than k tokens (inside a repeating run, the latest is one step back) gives way to an
    // older one followed by more.
    size_t best_end = 0, best_take = 0;
    for (size_t end = n - 1; end >= len && best_take < k; --end) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + static_cast<std::ptrdiff_t>(end - len))) continue;
      const size_t take = std::min(k, n - end);
      if (take > best_take) best_end = end, best_take = take;
    }
    if (best_take)
      return {history.begin() + static_cast<std::ptrdiff_t>(best_end),
              history.begin() + static_cast<std::ptrdiff_t>(best_end + best_take)};
  }
  return {};
}

namespace {

class NgramDrafter final : public Drafter {
 public:
  std::vector<Token> draft(EngineSequence&, std::span<const Token> history, size_t k) override {
    return ngram_draft(history, k);
  }
};

class MtpDrafter final : public Drafter {
 public:
  std::vector<Token> draft(EngineSequence& seq, std::span<const Token> history, size_t k) override {
    if (history.empty()) return {};
    return seq.model_draft(history.back(), k);
  }
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_drafter() { return std::make_unique<NgramDrafter>(); }
std::unique_ptr<Drafter> make_mtp_drafter() { return std::make_unique<MtpDrafter>(); }

}  // namespace ds4::serving
