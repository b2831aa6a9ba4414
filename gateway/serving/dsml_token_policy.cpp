// DSML-safe sampling policy. See dsml_token_policy.hpp.
#include "gateway/serving/dsml_token_policy.hpp"

#include <cmath>
#include <stdexcept>

namespace ds4::serving {

std::optional<Token> argmax(std::span<const float> logits) {
  std::optional<Token> best;
  float best_logit = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i])) continue;
    if (!best || logits[i] > best_logit) {
      best = static_cast<Token>(i);
      best_logit = logits[i];
    }
  }
  return best;
}

DsmlTokenPolicy::DsmlTokenPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started,
                                 protocol::ForcedCall forced)
    : backend_(std::move(backend)), state_(thinking_started, std::move(forced)) {
  if (!backend_) throw std::invalid_argument("DsmlTokenPolicy: null backend");
}

std::optional<Token> DsmlTokenPolicy::choose(std::span<const float> logits) {
  std::string_view forced = state_.forced_text();
  if (!forced.empty()) return constrained(logits, forced);
  if (state_.zone() == protocol::SamplingZone::Structural) return argmax(logits);
  return std::nullopt;
}

void DsmlTokenPolicy::accepted(Token, std::string_view bytes) { state_.feed(bytes); }

std::optional<Token> DsmlTokenPolicy::constrained(std::span<const float> logits, std::string_view forced) {
  if (token_bytes_.empty()) {
    token_bytes_.resize(backend_->vocab_size());
    for (size_t t = 0; t < token_bytes_.size(); ++t) {
      if (backend_->is_end_of_generation(static_cast<Token>(t))) continue;
      try {
        token_bytes_[t] = backend_->token_bytes(static_cast<Token>(t));
      } catch (const std::exception&) {
        // not a token with bytes; never allowed
      }
    }
  }
  const bool open_ended = state_.forced_is_open_ended();
  std::optional<Token> best;
  float best_logit = 0;
  for (size_t t = 0; t < token_bytes_.size() && t < logits.size(); ++t) {
    const std::string& b = token_bytes_[t];
    if (b.empty() || !std::isfinite(logits[t])) continue;
    bool fits = forced.starts_with(b) || (open_ended && std::string_view(b).starts_with(forced));
    if (fits && (!best || logits[t] > best_logit)) {
      best = static_cast<Token>(t);
      best_logit = logits[t];
    }
  }
  return best;
}

}  // namespace ds4::serving
