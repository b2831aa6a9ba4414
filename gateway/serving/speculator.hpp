#pragma once
// Speculator: the exact speculative decoding of one turn (docs/speculation.md §the-loop).
//
// The worker's decode loop stays as it was (choose a token, emit it, feed it), and asks the
// Speculator to do the choosing and the feeding. Feeding a token t also asks the drafter for up
// to k tokens after it and appends t and the drafts in one verify forward, whose logits after
// each token are bit-identical to decoding them one by one (ds4::Context::verify). The next
// choices are then made from those logits, by the same choose_token the plain loop uses (token
// policy, sampler and its random stream, end-of-generation rules): a draft that equals the
// choice is already in the context and costs nothing more; at the first one that differs the
// rest are taken back with truncate(). The tokens chosen are therefore the ones the plain loop
// chooses, for every k, drafter, temperature and seed; a drafter only changes how many forwards
// they cost.
#include <cstddef>
#include <span>
#include <vector>

#include "gateway/serving/drafter.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/token_choice.hpp"

namespace ds4::serving {

struct SpeculationCounts {
  size_t drafted = 0, accepted = 0;  // rejected = drafted - accepted
};

class Speculator {
 public:
  // `drafter` null or `k` 0: every call is the plain step (choose_token, one append).
  Speculator(EngineSequence& seq, Drafter* drafter, size_t k, std::span<const Token> prompt);

  // The token at the current position, chosen exactly as choose_token(policy, seq, ...) would on
  // a sequence holding only the committed tokens.
  // `bias`, `seen` and `weighing_decodes` as in choose_token (logit_bias; the logits the choice
  // was made from; decodes spent weighing alternatives).
  Token choose(TokenPolicy* policy, const EngineBackend& backend, const SampleFn& sample, std::vector<float>& held,
               std::span<const std::pair<Token, float>> bias = {}, std::vector<float>* seen = nullptr,
               size_t* weighing_decodes = nullptr);
  // Commits `t` (the token just chosen) as the plain loop's seq.append(t) would; `more` is how
  // many tokens may still be chosen after it (drafting more than that is wasted).
  void feed(Token t, size_t more);
  // Takes back drafts beyond the committed tokens, so the sequence ends as the plain loop's.
  void finish();

  const SpeculationCounts& counts() const { return counts_; }

 private:
  size_t draft_budget(size_t more) const;
  void settle_round();

  EngineSequence& seq_;
  Drafter* drafter_;
  size_t k_max_;
  std::vector<Token> history_;             // prompt + chosen tokens: what the drafter reads
  size_t committed_ = 0;                   // tokens of seq_ the plain loop would hold
  size_t ahead_base_ = 0;                  // ahead_[i]: logits after token ahead_base_ + i
  std::vector<std::vector<float>> ahead_;  // from the last verify
  // Adaptive depth: deterministic in the tokens alone, and whatever it picks the output is the
  // same (docs/speculation.md §adaptive-k).
  size_t k_now_ = 0, cooldown_ = 0, skip_ = 0;
  size_t round_drafted_ = 0, round_accepted_ = 0;
  SpeculationCounts counts_;
};

}  // namespace ds4::serving
