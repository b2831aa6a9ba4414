// DSML-safe sampling policy. See dsml_token_policy.hpp.
#include "gateway/serving/dsml_token_policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gateway/protocol/request_error.hpp"

namespace ds4::serving {

DsmlTokenPolicy::DsmlTokenPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started,
                                 protocol::ForcedCall forced, std::vector<protocol::DeclaredTool> tools)
    : backend_(std::move(backend)), state_(thinking_started, std::move(forced), std::move(tools)) {
  if (!backend_) throw std::invalid_argument("DsmlTokenPolicy: null backend");
}

std::optional<Token> DsmlTokenPolicy::choose(std::span<const float> logits) {
  const std::vector<std::string> allowed = state_.allowed();
  if (!allowed.empty())
    if (auto t = constrained(logits, allowed)) return t;
  if (state_.zone() == protocol::SamplingZone::Structural) return structural(logits);
  return std::nullopt;
}

std::optional<Token> DsmlTokenPolicy::structural(std::span<const float> logits) const {
  // The best token, unless it runs into a constrained name the wrong way (a token such as
  // ` name="wea` for an undeclared tool); then the next best, and so on.
  std::vector<Token> refused;
  for (;;) {
    std::optional<Token> best;
    float best_logit = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!std::isfinite(logits[i]) || (best && logits[i] <= best_logit)) continue;
      if (backend_->is_end_of_generation(static_cast<Token>(i))) continue;  // inside the block
      if (std::find(refused.begin(), refused.end(), static_cast<Token>(i)) != refused.end()) continue;
      best = static_cast<Token>(i);
      best_logit = logits[i];
    }
    if (!best || state_.admits(backend_->token_bytes(*best))) return best;
    refused.push_back(*best);
  }
}

void DsmlTokenPolicy::accepted(Token, std::string_view bytes) { state_.feed(bytes); }

std::optional<Token> DsmlTokenPolicy::constrained(std::span<const float> logits,
                                                  const std::vector<std::string>& allowed) {
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
  std::optional<Token> best;
  float best_logit = 0;
  for (size_t t = 0; t < token_bytes_.size() && t < logits.size(); ++t) {
    const std::string& b = token_bytes_[t];
    if (b.empty() || !std::isfinite(logits[t])) continue;
    if (best && logits[t] <= best_logit) continue;
    bool within = false, past = false;
    for (const std::string& a : allowed) {
      within = within || a.starts_with(b);
      past = past || std::string_view(b).starts_with(a);
    }
    if (within || (past && state_.admits(b))) {
      best = static_cast<Token>(t);
      best_logit = logits[t];
    }
  }
  return best;
}

std::shared_ptr<DsmlTokenPolicy> chat_tool_policy(std::shared_ptr<const EngineBackend> backend,
                                                  const protocol::ChatRequest& request, bool tools_active,
                                                  bool thinking_started) {
  if (!tools_active) return nullptr;
  const std::vector<boost::json::object> tools = request.callable_tools();
  protocol::ForcedCall forced;
  if (request.tool_choice == "required") forced.required = true;
  if (request.tool_choice.starts_with("function:")) {
    forced.function = request.tool_choice.substr(9);
    bool known = false;
    for (const auto& tool : tools)
      if (const auto* name = tool.if_contains("name");
          name && name->is_string() && name->get_string() == forced.function)
        known = true;
    if (!known)
      throw protocol::RequestError("tool_choice", "tool_choice names the function '" + forced.function +
                                                      "', which is not among the request's tools");
  }
  return std::make_shared<DsmlTokenPolicy>(std::move(backend), thinking_started, std::move(forced),
                                           protocol::declared_tools(tools));
}

}  // namespace ds4::serving
