#pragma once
// The token-level engine protocol between a ds4d gateway and an upstream ds4d (POST
// /engine/generate): a GenerationJob as a JSON body, carrying everything the worker uses to choose
// tokens (prompt ids, sampler settings and seed, stops, logit_bias, the token policy's spec), and
// what its sink hears as newline-delimited JSON events. So a served turn samples what a local one
// would. Body fields and the event table: docs/scale-out.md §engine-protocol.
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
