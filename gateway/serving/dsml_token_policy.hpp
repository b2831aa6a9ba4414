#pragma once
// DsmlTokenPolicy: DSML-safe sampling and tool_choice enforcement, as a TokenPolicy.
//
// protocol::DsmlSamplingState says where the output is; this applies it to the logits:
//  * a forced tool call (tool_choice required / any / a named function) still to be opened:
//    the highest-logit token whose bytes continue the forced text (or, when the function is not
//    named, may run past it into a name) is taken; every other token is excluded;
//  * protocol structure (tags, attributes, JSON punctuation, closing markers): greedy (argmax);
//  * reasoning, content and payload: nullopt, so the job's sampler (the request's settings)
//    chooses.
// The token byte table is built on the first forced step (one pass over the vocabulary).
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/dsml_sampling.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::serving {

class DsmlTokenPolicy final : public TokenPolicy {
 public:
  // `backend` must outlive the policy (the job holds the backend's shared_ptr via the endpoint).
  DsmlTokenPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started, protocol::ForcedCall forced);

  std::optional<Token> choose(std::span<const float> logits) override;
  void accepted(Token token, std::string_view bytes) override;

  const protocol::DsmlSamplingState& state() const { return state_; }

 private:
  std::optional<Token> constrained(std::span<const float> logits, std::string_view forced);

  std::shared_ptr<const EngineBackend> backend_;
  protocol::DsmlSamplingState state_;
  std::vector<std::string> token_bytes_;  // lazily filled
};

// Index of the largest finite logit; nullopt when none is finite.
std::optional<Token> argmax(std::span<const float> logits);

}  // namespace ds4::serving
