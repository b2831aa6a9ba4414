#pragma once
// The output controls (protocol/output_controls.hpp) on a job, and the logprobs in each API's
// response shape (docs/api-parameters.md §output).
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <memory>
#include <vector>

#include "gateway/protocol/output_controls.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"

namespace ds4::http {

// Sets the job's logit_bias, logprobs and, for a JSON format, its token policy (the job must not
// have one yet: JSON formats with active tools are refused). Throws protocol::RequestError
// naming the parameter: a logit_bias id outside the vocabulary, logprobs on a stream (not
// implemented), a JSON format together with tools.
void apply_output_controls(serving::GenerationJob& job, std::shared_ptr<serving::EngineBackend> backend,
                           const protocol::OutputControls& output, bool stream, bool tools_active,
                           bool thinking_started);

// Chat: {"content":[{token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}], "refusal":null}.
boost::json::object chat_logprobs(const std::vector<serving::TokenLogprob>& tokens);
// Completions: {"tokens", "token_logprobs", "top_logprobs":[{token: logprob}], "text_offset"}.
boost::json::object completion_logprobs(const std::vector<serving::TokenLogprob>& tokens);
// Responses output_text: [{token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}].
boost::json::array responses_logprobs(const std::vector<serving::TokenLogprob>& tokens);

}  // namespace ds4::http
