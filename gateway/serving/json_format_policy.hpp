#pragma once
// JsonFormatPolicy: response_format json_object / json_schema (and Responses text.format) as a
// TokenPolicy, on the same machinery that keeps tool calls well formed (docs/json-constraint.md).
//
// Reasoning (before "</think>" when the prompt opened it) is free. From the answer's first byte
// on, the sampler (the request's settings) chooses only among tokens whose bytes keep the text a
// prefix of a JSON value the schema accepts (protocol::JsonConstraint); the output may not end
// before the value is complete, and once nothing can follow it only an end of generation is left.
// So the answer parses as JSON and matches the schema, unless a limit (max_tokens, the context)
// cuts it first: then the finish reason says so.
#include <memory>
#include <string>
#include <vector>

#include "gateway/protocol/json_constraint.hpp"
#include "gateway/protocol/output_controls.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::serving {

class JsonFormatPolicy final : public TokenPolicy {
 public:
  JsonFormatPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started,
                   protocol::JsonConstraint constraint);

  std::optional<Token> choose(std::span<const float>) override { return std::nullopt; }
  void accepted(Token token, std::string_view bytes) override;
  bool may_end() const override { return !answering_ || broken_ || constraint_.complete(); }
  bool restricts() const override { return answering_ && !broken_; }
  bool admits(Token token) const override;

 private:
  std::shared_ptr<const EngineBackend> backend_;
  protocol::JsonConstraint constraint_;
  bool answering_;       // reasoning is over
  bool broken_ = false;  // a byte the constraint refused got through (no admitted token was left)
  std::string tail_;     // recent reasoning bytes, to find "</think>"
  mutable std::vector<std::string> token_bytes_;  // lazily filled
};

// The policy for a request's output controls: null for text; else the JSON format policy.
std::shared_ptr<TokenPolicy> response_format_policy(std::shared_ptr<const EngineBackend> backend,
                                                    const protocol::OutputControls& output, bool thinking_started);

}  // namespace ds4::serving
