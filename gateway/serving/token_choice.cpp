// One decode step's choice. See token_choice.hpp.
#include "gateway/serving/token_choice.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ds4::serving {

namespace {

Token choose(TokenPolicy* policy, std::span<const float> logits, const SampleFn& sample) {
  std::optional<Token> chosen = policy ? policy->choose(logits) : std::nullopt;
  return chosen ? *chosen : sample(logits);
}

}  // namespace

Token next_token(TokenPolicy* policy, std::span<const float> logits, const EngineBackend& backend,
                 const SampleFn& sample) {
  Token t = choose(policy, logits, sample);
  if (!policy || policy->may_end() || !backend.is_end_of_generation(t)) return t;
  std::vector<float> masked(logits.begin(), logits.end());
  bool other = false;
  for (size_t i = 0; i < masked.size(); ++i) {
    if (backend.is_end_of_generation(static_cast<Token>(i))) masked[i] = -std::numeric_limits<float>::infinity();
    else other = other || std::isfinite(masked[i]);
  }
  return other ? choose(policy, masked, sample) : t;
}

}  // namespace ds4::serving
