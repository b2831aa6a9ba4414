// DSML-safe sampling policy. See dsml_token_policy.hpp.
#include "gateway/serving/dsml_token_policy.hpp"

#include <algorithm>
#include <boost/json.hpp>
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
  // The best token, unless it runs into a constrained name or value the wrong way (a token such
  // as ` name="wea` for an undeclared tool, a quote where the schema wants a number); then the
  // next best, and so on (one sort when the best is refused).
  std::optional<Token> best;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i]) || (best && logits[i] <= logits[*best])) continue;
    if (backend_->is_end_of_generation(static_cast<Token>(i))) continue;  // inside the block
    best = static_cast<Token>(i);
  }
  if (!best || state_.admits(backend_->token_bytes(*best))) return best;
  std::vector<Token> order;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i]) && !backend_->is_end_of_generation(static_cast<Token>(i)))
      order.push_back(static_cast<Token>(i));
  std::stable_sort(order.begin(), order.end(), [&](Token a, Token b) { return logits[a] > logits[b]; });
  const std::vector<std::string>& table = token_table();
  for (Token t : order)
    if (static_cast<size_t>(t) < table.size() && !table[t].empty() && state_.admits(table[t])) return t;
  return std::nullopt;
}

void DsmlTokenPolicy::accepted(Token, std::string_view bytes) { state_.feed(bytes); }

const std::vector<std::string>& DsmlTokenPolicy::token_table() const {
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
  return token_bytes_;
}

bool DsmlTokenPolicy::restricts() const {
  return state_.value_constrained() && state_.zone() == protocol::SamplingZone::Payload;
}

bool DsmlTokenPolicy::admits(Token token) const {
  const std::vector<std::string>& table = token_table();
  const size_t i = static_cast<size_t>(token);
  return i < table.size() && !table[i].empty() && state_.admits(table[i]);
}

std::optional<Token> DsmlTokenPolicy::constrained(std::span<const float> logits,
                                                  const std::vector<std::string>& allowed) {
  token_table();
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
  boost::json::array tool_list(tools.begin(), tools.end());
  boost::json::object spec{{"kind", "tools"},
                           {"thinking_started", thinking_started},
                           {"required", forced.required},
                           {"function", forced.function},
                           {"tools", std::move(tool_list)}};
  auto policy = std::make_shared<DsmlTokenPolicy>(std::move(backend), thinking_started, std::move(forced),
                                                  protocol::declared_tools(tools));
  policy->spec = boost::json::serialize(spec);
  return policy;
}

}  // namespace ds4::serving
