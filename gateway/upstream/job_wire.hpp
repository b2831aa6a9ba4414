#pragma once
// The token-level engine protocol between a ds4d gateway and an upstream ds4d (POST
// /engine/generate, docs/scale-out.md §engine-protocol): a GenerationJob as a JSON body, and what
// its sink hears as a stream of events, one JSON object per line.
//
// The body carries everything the engine worker uses to choose tokens: the prompt's ids, the
// sampler settings with the seed, max_tokens, stop strings, logit_bias, logprobs, the session
// hint, the time left, speculation, and the token policy (DSML-safe sampling with tool_choice,
// no tool calls, a JSON format) by the spec its factory wrote (TokenPolicy::spec), from which the
// upstream builds the same policy. So a served turn samples what a local one would.
//
// Events, in order (each line one object with one key):
//   {"queued":N}                         the job waits at position N (repeated)
//   {"prefill":[done,total]}             between prefill chunks
//   {"prefilled":USAGE}                  the prompt is in the context; counts are final
//   {"tokens":[ids],"bytes":"HEX"}       tokens sampled since the last event and the output bytes
//                                        released with them (stop strings cut; hex because a
//                                        token may end inside a UTF-8 character)
//   {"finished":{"finish":R,"error":E,"usage":USAGE,"completion":[ids],"logprobs":[...]}}
#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::upstream {

// The body for `job`; its deadline becomes the milliseconds left at `now`. Throws
// std::invalid_argument when the job's policy has no spec (it could not be rebuilt upstream).
boost::json::object job_to_wire(const serving::GenerationJob& job, std::chrono::steady_clock::time_point now);

// The job a body describes, its policy built on `backend` (sink and cancel flag are the
// caller's). Throws protocol::RequestError naming the field for a malformed body.
serving::GenerationJob job_from_wire(const boost::json::value& body,
                                     std::shared_ptr<const serving::EngineBackend> backend);

// The policy a TokenPolicy::spec describes; throws protocol::RequestError ("policy") when it is
// malformed.
std::shared_ptr<serving::TokenPolicy> policy_from_spec(const boost::json::value& spec,
                                                       std::shared_ptr<const serving::EngineBackend> backend);

boost::json::object usage_to_wire(const serving::GenerationUsage& usage);
serving::GenerationUsage usage_from_wire(const boost::json::object& o);
boost::json::object result_to_wire(const serving::GenerationResult& result);
serving::GenerationResult result_from_wire(const boost::json::object& o);
std::optional<serving::FinishReason> finish_reason_from_name(std::string_view name);

std::string to_hex(std::string_view bytes);
// Throws std::invalid_argument for odd lengths or non-hex digits.
std::string from_hex(std::string_view hex);

}  // namespace ds4::upstream
