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
  // last one included); fewer or none when it has no good guess. `seq` holds the history but its
  // last token, which is appended next. One drafter serves every session: any per-sequence
  // state lives in the sequence. Engine worker thread of `seq` only.
  virtual std::vector<Token> draft(EngineSequence& seq, std::span<const Token> history, size_t k) = 0;
};

// Prompt lookup: the longest recent suffix of the history (kNgramMax down to kNgramMin tokens)
// that occurred before, and the tokens that followed its latest earlier occurrence (an older
// one when the latest is followed by fewer than k tokens).
constexpr size_t kNgramMin = 2, kNgramMax = 4;
std::vector<Token> ngram_draft(std::span<const Token> history, size_t k);
std::unique_ptr<Drafter> make_ngram_drafter();

// The model's own draft head (the MTP block, docs/speculation.md §mtp): EngineSequence::model_draft
// of the sequence, which drafts nothing on a backend without one.
std::unique_ptr<Drafter> make_mtp_drafter();

}  // namespace ds4::serving
