#pragma once
// Drafters for exact speculative decoding (docs/speculation.md §drafters): a drafter proposes
// the tokens that may follow; the target model verifies them all in one forward and keeps only
// what it would have chosen itself, so a drafter changes speed, never output.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "gateway/serving/engine_backend.hpp"

namespace ds4::serving {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to `k` tokens proposed to follow `history` (the prompt and every token chosen so far, the
  // last one included); fewer or none when it has no good guess. Engine worker thread only.
  virtual std::vector<Token> draft(std::span<const Token> history, size_t k) = 0;
};

// Prompt lookup: the longest recent suffix of the history (kNgramMax down to kNgramMin tokens)
// that occurred before, and the tokens that followed its latest earlier occurrence (an older
// one when the latest is followed by fewer than k tokens).
constexpr size_t kNgramMin = 2, kNgramMax = 4;
std::vector<Token> ngram_draft(std::span<const Token> history, size_t k);
std::unique_ptr<Drafter> make_ngram_drafter();

}  // namespace ds4::serving
