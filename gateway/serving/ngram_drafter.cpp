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
    // before the history does, so at least one token follows it.
    for (size_t end = n - 1; end >= len; --end) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + static_cast<std::ptrdiff_t>(end - len)))
        continue;
      const size_t take = std::min(k, n - end);
      return {history.begin() + static_cast<std::ptrdiff_t>(end),
              history.begin() + static_cast<std::ptrdiff_t>(end + take)};
    }
  }
  return {};
}

namespace {

class NgramDrafter final : public Drafter {
 public:
  std::vector<Token> draft(std::span<const Token> history, size_t k) override { return ngram_draft(history, k); }
};

}  // namespace

std::unique_ptr<Drafter> make_ngram_drafter() { return std::make_unique<NgramDrafter>(); }

}  // namespace ds4::serving
