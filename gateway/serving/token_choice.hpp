#pragma once
// choose_token (weigh_alternatives, then next_token): one decode step's choice, shared by the
// serving worker and the agent evaluation (so what is measured is what is served).
//
// The job's TokenPolicy decides first (DSML structure, forced and declared names); where it
// leaves the choice open, `sample` (the request's sampler, or greedy) decides. Where the policy
// says the output may not end yet and the choice is an end-of-generation token, the same choice
// is made again over the logits with every end-of-generation token excluded; a token the policy
// refuses (refuses()) is taken out the same way, one at a time. Rare (the model ending inside a
// tool call, or opening one where it may not), so the copy of the logits it takes costs nothing
// in practice.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::serving {

using SampleFn = std::function<Token(std::span<const float>)>;

// `policy` may be null. Returns an end-of-generation token only where ending is allowed, and a
// refused token never, unless every other token's logit is non-finite.
Token next_token(TokenPolicy* policy, std::span<const float> logits, const EngineBackend& backend,
                 const SampleFn& sample);

// Where the policy has alternatives (whole texts, such as the declared tool names with their
// call openings at the start of a name): appends each one's tokens to `seq`
// (backend.encode_plain), sums their log-probabilities, takes `seq` back to where it was, and
// calls policy.prefer() with the likeliest (the first on a tie). The alternatives are visited
// likeliest first token first, and one stops as soon as its partial sum is below the best total,
// so most cost a decode or two. `logits` are the current ones; they are copied into `held`, since
// the sequence's own may not survive the truncation. Returns the number of decodes spent when it
// weighed (use `held` as this step's logits); nullopt when there was nothing to weigh, or the
// sequence cannot take back the longest alternative (then the first token decides, as without
// weighing).
std::optional<size_t> weigh_alternatives(TokenPolicy& policy, EngineSequence& seq, const EngineBackend& backend,
                                         std::span<const float> logits, std::vector<float>& held);

// One decode step on `seq` as the server takes it: weigh_alternatives (when there is a policy),
// then next_token over this step's logits. `held` is scratch the caller keeps across steps;
// `weighing_decodes`, when given, is increased by the decodes the weighing spent.
Token choose_token(TokenPolicy* policy, EngineSequence& seq, const EngineBackend& backend, const SampleFn& sample,
                   std::vector<float>& held, size_t* weighing_decodes = nullptr);

}  // namespace ds4::serving
