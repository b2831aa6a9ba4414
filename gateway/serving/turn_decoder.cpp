// The decode step shared by the worker and the agent evaluator; see turn_decoder.hpp.
#include "gateway/serving/turn_decoder.hpp"

namespace ds4::serving {

TurnDecoder::TurnDecoder(EngineSequence& seq, const EngineBackend& backend, TokenPolicy* policy, SampleFn sample,
                         Drafter* drafter, size_t k, std::span<const Token> prompt)
    : backend_(backend), policy_(policy), sample_(std::move(sample)), spec_(seq, drafter, k, prompt) {}

DecodedToken TurnDecoder::next(std::span<const std::pair<Token, float>> bias, std::vector<float>* seen) {
  DecodedToken out;
  out.token = spec_.choose(policy_, backend_, sample_, held_, bias, seen, &weighing_decodes_);
  out.ends = backend_.is_end_of_generation(out.token);
  if (out.ends) return out;
  out.bytes = backend_.token_bytes(out.token);
  if (policy_) policy_->accepted(out.token, out.bytes);
  return out;
}

}  // namespace ds4::serving
