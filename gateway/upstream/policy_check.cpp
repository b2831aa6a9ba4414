// Token policies as checks on upstream-sampled tokens. See policy_check.hpp.
#include "gateway/upstream/policy_check.hpp"

#include <fmt/format.h>

#include <limits>

namespace ds4::upstream {

namespace {

std::string shown(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes)
    out += c >= 0x20 && c < 0x7f && c != '"' ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  return out;
}

}  // namespace

PolicyCheck::PolicyCheck(serving::TokenPolicy* policy, const serving::EngineBackend& backend)
    : policy_(policy), backend_(backend) {}

std::optional<std::string> PolicyCheck::end() {
  if (!policy_) return std::nullopt;
  if (!policy_->may_end())
    return std::string(
        "the output ended where the token policy may not end (inside a tool-call block, or before "
        "the JSON value was complete)");
  if (std::optional<serving::Token> forced = forced_here())
    return fmt::format(
        "the output ended where the token policy requires more (it would take \"{}\": a tool call "
        "that tool_choice requires)",
        shown(backend_.token_bytes(*forced)));
  return std::nullopt;
}

std::optional<serving::Token> PolicyCheck::forced_here() {
  if (flat_.size() != backend_.vocab_size()) flat_.assign(backend_.vocab_size(), 0.0f);
  return policy_->choose(flat_);
}

std::optional<std::string> PolicyCheck::next(serving::Token token) {
  if (!policy_) return std::nullopt;
  const size_t vocab = backend_.vocab_size();
  if (token < 0 || static_cast<size_t>(token) >= vocab)
    return fmt::format("token id {} is outside the vocabulary", token);
  if (backend_.is_end_of_generation(token)) return end();
  const std::string bytes = backend_.token_bytes(token);
  if (policy_->restricts() && !policy_->admits(token))
    return fmt::format(
        "token {} (\"{}\") is not admitted here (the JSON constraint of the format or of a tool's "
        "parameters)",
        token, shown(bytes));
  if (policy_->refuses(bytes))
    return fmt::format("token {} (\"{}\") opens a tool-call block in a turn that may not call tools", token,
                       shown(bytes));
  // Would the policy have taken this token had the model wanted only it? A constraining step
  // (a forced opening, a declared name, protocol structure) answers with another token or none;
  // a free step answers nullopt, which a policy that constrains here never does for any logits.
  if (one_hot_.size() != vocab) one_hot_.assign(vocab, -std::numeric_limits<float>::infinity());
  one_hot_[static_cast<size_t>(token)] = 0.0f;
  std::optional<serving::Token> taken = policy_->choose(one_hot_);
  one_hot_[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
  if (!taken) {
    if (std::optional<serving::Token> forced = forced_here())
      return fmt::format(
          "token {} (\"{}\") is not one the token policy allows here (it would take e.g. \"{}\": a "
          "tool call tool_choice requires, a declared name, the DSML structure)",
          token, shown(bytes), shown(backend_.token_bytes(*forced)));
  } else if (*taken != token) {
    return fmt::format("token {} (\"{}\") is not one the token policy allows here (it would take \"{}\")", token,
                       shown(bytes), shown(backend_.token_bytes(*taken)));
  }
  policy_->accepted(token, bytes);
  return std::nullopt;
}

}  // namespace ds4::upstream
