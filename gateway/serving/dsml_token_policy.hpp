#pragma once
// DsmlTokenPolicy: DSML-safe sampling and tool_choice enforcement, as a TokenPolicy.
//
// protocol::DsmlSamplingState says where the output is; this applies it to the logits: allowed
// names and forced openings take the best fitting token, structure is greedy, reasoning, content
// and payload are left to the job's sampler (nullopt); no end-of-generation token is taken inside
// the tool-call block (may_end()). alternatives() gives the whole candidates the model weighs.
// The rules: docs/chat-format.md §sampling-a-call, §where-the-sampler-is.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/chat_request.hpp"
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
  // At the start of a tool or parameter name with more than one candidate: the texts to weigh
  // whole (DsmlSamplingState::name_choice_texts), in prefer()'s order.
  std::vector<std::string> alternatives() const override { return state_.name_choice_texts(); }
  void prefer(size_t alternative) override { state_.prefer(alternative); }
  // In a JSON value's strings (payload), the sampler chooses among the tokens the value's schema
  // admits; its structure is taken greedily among them (structural()).
  bool restricts() const override;
  bool admits(Token token) const override;

  const protocol::DsmlSamplingState& state() const { return state_; }

 private:
  std::optional<Token> constrained(std::span<const float> logits, const std::vector<std::string>& allowed);
  std::optional<Token> structural(std::span<const float> logits) const;

  std::shared_ptr<const EngineBackend> backend_;
  protocol::DsmlSamplingState state_;
  const std::vector<std::string>& token_table() const;
  mutable std::vector<std::string> token_bytes_;  // lazily filled
};

// The policy the server applies to a chat turn, built the same way for every caller (the HTTP
// endpoints and `ds4ctl eval-agent`, so the evaluation measures what is served): null when the
// rendered prompt has no active tools; otherwise the request's tool_choice ("required", or
// "function:NAME" for one named function) and its declared tools and parameters.
// `thinking_started`: the rendered prompt ends with "<think>". Throws protocol::RequestError
// (param "tool_choice") when tool_choice names a function the request does not declare.
std::shared_ptr<DsmlTokenPolicy> chat_tool_policy(std::shared_ptr<const EngineBackend> backend,
                                                  const protocol::ChatRequest& request, bool tools_active,
                                                  bool thinking_started);

}  // namespace ds4::serving
