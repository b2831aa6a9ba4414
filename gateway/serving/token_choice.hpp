#pragma once
// next_token: one decode step's choice, shared by the serving worker and the agent evaluation
// (so what is measured is what is served).
//
// The job's TokenPolicy decides first (DSML structure, forced and declared names); where it
// leaves the choice open, `sample` (the request's sampler, or greedy) decides. Where the policy
// says the output may not end yet and the choice is an end-of-generation token, the same choice
// is made again over the logits with every end-of-generation token excluded. Rare (the model
// ending inside a tool call), so the copy of the logits it takes costs nothing in practice.
#include <functional>
#include <span>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::serving {

using SampleFn = std::function<Token(std::span<const float>)>;

// `policy` may be null. Returns an end-of-generation token only where ending is allowed, or
// where every other token's logit is non-finite.
Token next_token(TokenPolicy* policy, std::span<const float> logits, const EngineBackend& backend,
                 const SampleFn& sample);

}  // namespace ds4::serving
