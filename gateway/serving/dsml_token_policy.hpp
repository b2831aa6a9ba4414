#pragma once
// DsmlTokenPolicy: DSML-safe sampling and tool_choice enforcement, as a TokenPolicy.
//
// protocol::DsmlSamplingState says where the output is; this applies it to the logits:
//  * a forced tool call (tool_choice required / any / a named function) still to be opened, a
//    tool name or a parameter name being written: the highest-logit token whose bytes fit one
//    of the allowed continuations (a prefix of one, or running past the whole of one) is taken;
//    every other token is excluded;
//  * protocol structure (tags, attributes, JSON punctuation, closing markers): greedy (argmax);
//  * reasoning, content and payload: nullopt, so the job's sampler (the request's settings)
//    chooses.
// Inside the tool-call block no end-of-generation token is taken (may_end() is false; the
// structural argmax skips them). Where the model's own best token at the start of a name is no
// declared name's, which name is decided by the model's probability of each whole name
// (alternatives(); the first token alone is a poor judge when none of them is what it expected).
// The token byte table is built on the first constrained step (one pass over the vocabulary).
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
  DsmlTokenPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started, protocol::ForcedCall forced,
                  std::vector<protocol::DeclaredTool> tools = {});

  std::optional<Token> choose(std::span<const float> logits) override;
  void accepted(Token token, std::string_view bytes) override;
  bool may_end() const override { return !state_.inside_block(); }
  // At the start of a tool or parameter name whose first token the model would spend outside
  // the declared names: the candidate names, to be weighed whole.
  std::vector<std::string> alternatives(std::span<const float> logits) override;
  void prefer(size_t alternative) override { state_.prefer(alternative); }

  const protocol::DsmlSamplingState& state() const { return state_; }

 private:
  std::optional<Token> constrained(std::span<const float> logits, const std::vector<std::string>& allowed);
  std::optional<Token> structural(std::span<const float> logits) const;

  std::shared_ptr<const EngineBackend> backend_;
  protocol::DsmlSamplingState state_;
  std::vector<std::string> token_bytes_;  // lazily filled
};

}  // namespace ds4::serving
