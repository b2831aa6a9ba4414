// response_format by constrained decoding. See json_format_policy.hpp.
#include "gateway/serving/json_format_policy.hpp"

#include <boost/json.hpp>
#include <stdexcept>

namespace ds4::serving {

namespace {
constexpr std::string_view kThinkClose = "</think>";
}

JsonFormatPolicy::JsonFormatPolicy(std::shared_ptr<const EngineBackend> backend, bool thinking_started,
                                   protocol::JsonConstraint constraint)
    : backend_(std::move(backend)), constraint_(std::move(constraint)), answering_(!thinking_started) {
  if (!backend_) throw std::invalid_argument("JsonFormatPolicy: null backend");
}

void JsonFormatPolicy::accepted(Token, std::string_view bytes) {
  for (char c : bytes) {
    if (!answering_) {
      tail_.push_back(c);
      if (tail_.size() > kThinkClose.size()) tail_.erase(0, tail_.size() - kThinkClose.size());
      answering_ = tail_ == kThinkClose;
      continue;
    }
    if (!broken_ && !constraint_.step(c)) broken_ = true;
  }
}

bool JsonFormatPolicy::admits(Token token) const {
  if (token_bytes_.empty()) {
    token_bytes_.resize(backend_->vocab_size());
    for (size_t t = 0; t < token_bytes_.size(); ++t) {
      if (backend_->is_end_of_generation(static_cast<Token>(t))) continue;
      try {
        token_bytes_[t] = backend_->token_bytes(static_cast<Token>(t));
      } catch (const std::exception&) {
        // not a token with bytes; never admitted
      }
    }
  }
  const size_t i = static_cast<size_t>(token);
  return i < token_bytes_.size() && !token_bytes_[i].empty() && constraint_.admits(token_bytes_[i]);
}

std::shared_ptr<TokenPolicy> response_format_policy(std::shared_ptr<const EngineBackend> backend,
                                                    const protocol::OutputControls& output, bool thinking_started) {
  using F = protocol::OutputControls::Format;
  if (output.format == F::Text) return nullptr;
  protocol::JsonConstraint constraint =
      output.format == F::JsonObject ? protocol::JsonConstraint::any_object() : protocol::JsonConstraint(output.schema);
  auto policy = std::make_shared<JsonFormatPolicy>(std::move(backend), thinking_started, std::move(constraint));
  boost::json::object spec{{"kind", "json"}, {"thinking_started", thinking_started}};
  spec["schema"] = output.format == F::JsonObject || !output.schema ? boost::json::value(nullptr) : *output.schema;
  policy->spec = boost::json::serialize(spec);
  return policy;
}

}  // namespace ds4::serving
