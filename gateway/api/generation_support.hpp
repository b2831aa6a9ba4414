#pragma once
// What the chat and completion endpoints share around a generation: response ids, sampling
// settings from the request, the finish reason clients see, usage with protocol_tokens, and
// the SSE response head.
//
// protocol_tokens (our usage extension) = prompt tokens the server added around the client's
// text: the tokens of the prompt itself that hold no byte of a client span (message content,
// reasoning, tool arguments and schemas, or the /v1/completions prompt). Exact: every prompt
// token is either protocol or client, and a token merged across a span edge holds client bytes,
// so it is the client's.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/openai_shapes.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/transport/response_channel.hpp"

namespace ds4::http {

// "chatcmpl-…" / "cmpl-…": prefix + 24 hex digits, unique within the process and across restarts.
std::string new_response_id(std::string_view prefix);
int64_t unix_now();

// Sampler settings for a request. As in ds4-server, thinking modes ignore the client's
// temperature/top_p/top_k/min_p and use the defaults (DeepSeek's thinking API is fixed); the
// seed is always honoured. Throws RequestError for values outside their domain.
sampler::SamplerConfig sampling_for(const protocol::SamplingParams& params, protocol::Thinking thinking);

// max_tokens for the job; 0 in the request is a RequestError, absent means "until EOS or full".
size_t max_tokens_for(std::optional<uint32_t> requested);

// Finish reason clients see for a serving outcome (tool calls are decided by the caller).
// How a turn ended, as the client APIs see it; each maps it onto its own field at the edge
// (OpenAI's finish_reason, Anthropic's stop_reason, the Responses status).
enum class ClientFinish { Stop, Length, ToolCalls, Error };
// OpenAI's finish_reason for it: "stop", "length", "tool_calls", "error".
const char* openai_finish_reason(ClientFinish finish);
ClientFinish client_finish_reason(serving::FinishReason reason);

// `prompt` tokenizes the rendered text (its token bytes concatenate to it); `client_spans` are
// sorted, disjoint byte ranges of that text.
size_t protocol_token_count(const serving::EngineBackend& backend, std::span<const serving::Token> prompt,
                            const std::vector<std::pair<size_t, size_t>>& client_spans);

protocol::openai::Usage usage_of(const serving::GenerationUsage& usage, size_t protocol_tokens);

ResponseHead sse_head();
ResponseHead json_head(unsigned status, std::string body);

}  // namespace ds4::http
