#pragma once
// TurnDecoder: the decode step of one turn as the server takes it, the one the engine worker
// (service_turn.cpp) and the agent evaluator (ds4ctl/eval_agent) both call, so that what is
// measured is what is served.
//
// next() chooses the token at the current position (Speculator::choose: the job's token policy,
// weighing its alternatives, then the sampler) and, unless it ends the generation, gives its
// bytes and tells the policy it was accepted. The caller decides whether the turn goes on (its
// limits, stop strings, the consumer) and then feed()s the token back, or stops.
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gateway/serving/drafter.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/speculator.hpp"
#include "gateway/serving/token_choice.hpp"

namespace ds4::serving {

struct DecodedToken {
  Token token = 0;
  bool ends = false;  // an end-of-generation token: no bytes, not to be fed
  std::string bytes;  // the token's bytes, already passed to the policy's accepted()
};

class TurnDecoder {
 public:
  // `seq` holds the prompt. `policy` may be null. `drafter` null or `k` 0: no speculation;
  // otherwise `prompt` is what the drafter reads first (speculator.hpp).
  TurnDecoder(EngineSequence& seq, const EngineBackend& backend, TokenPolicy* policy, SampleFn sample,
              Drafter* drafter = nullptr, size_t k = 0, std::span<const Token> prompt = {});

  // The next token. `bias` (logit_bias) and `seen` (receives the logits the choice was made
  // from, for logprobs) as in choose_token.
  DecodedToken next(std::span<const std::pair<Token, float>> bias = {}, std::vector<float>* seen = nullptr);
  // Commits the token next() gave; `more`: how many tokens may still follow it.
  void feed(Token t, size_t more) { spec_.feed(t, more); }
  // Leaves the sequence holding exactly the fed tokens (takes back unused drafts).
  void finish() { spec_.finish(); }

  const SpeculationCounts& speculation() const { return spec_.counts(); }
  // Decodes spent weighing alternatives so far, beyond one per chosen token.
  size_t weighing_decodes() const { return weighing_decodes_; }

 private:
  const EngineBackend& backend_;
  TokenPolicy* policy_;
  SampleFn sample_;
  Speculator spec_;
  std::vector<float> held_;  // this step's logits while alternatives are weighed
  size_t weighing_decodes_ = 0;
};

}  // namespace ds4::serving
