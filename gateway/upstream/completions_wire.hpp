#pragma once
// vLLM and SGLang as upstreams (docs/scale-out.md §vllm-and-sglang): the JSON of their OpenAI
// completions API as the gateway speaks it. A job goes out as POST /v1/completions with the
// prompt as token ids ("prompt": [ids]), streamed (SSE), asking for the sampled token ids back
// ("return_token_ids": true, vLLM >= 0.10.2, SGLang since its PR #30917); each "data:" line comes
// back as a CompletionsChunk. GET /v1/models gives the served model's name and max_model_len.
//
// Special tokens are not skipped in the engine's text (skip_special_tokens false), every end of
// generation of the gateway's tokenizer is a stop token (stop_token_ids), and the client's stop
// strings stay with the gateway (cut from the decoded token ids, as locally).
#include <boost/json.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/serving/generation.hpp"
#include "gateway/upstream/upstream_client.hpp"

namespace ds4::upstream {

// GET /v1/models: the first model listed and its max_model_len (0 where not given). Throws
// std::runtime_error for a malformed answer or an empty list.
struct ServedModel {
  std::string id;
  size_t context_length = 0;
};
ServedModel parse_served_models(std::string_view body);

// The POST /v1/completions body for `job` on a `kind` engine serving `model` with
// `context_length` tokens (max_tokens 0 becomes the room left in the context). `end_tokens`:
// the ids that end a turn in the gateway's tokenizer.
boost::json::object completions_request(const serving::GenerationJob& job, UpstreamKind kind, const std::string& model,
                                        size_t context_length, std::span<const serving::Token> end_tokens);

// One token's log-probability as the engine reports it: the alternatives by token id where the
// engine names them so ("token_id:N", vLLM's return_tokens_as_token_ids), else by their text.
struct ChunkLogprob {
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // key: "token_id:N" or the token's text
};

struct CompletionsChunk {
  bool done = false;                   // "data: [DONE]"
  std::string error;                   // an error object in the stream
  bool choice = false;                 // the chunk has a choices[0]
  bool has_token_ids = false;          // ... with token_ids (absent with text: return_token_ids unknown)
  std::vector<serving::Token> tokens;  // choices[0].token_ids: the ids sampled since the last chunk
  std::string text;                    // choices[0].text
  std::optional<std::string> finish;   // choices[0].finish_reason: "stop", "length", ...
  std::vector<ChunkLogprob> logprobs;  // one per token where logprobs were asked for
  bool has_usage = false;              // the last chunk (stream_options.include_usage)
  size_t prompt_tokens = 0, completion_tokens = 0;
  std::optional<size_t> cached_tokens;  // usage.prompt_tokens_details.cached_tokens
};

// One line of the SSE answer: nullopt for what carries nothing (blank lines, comments, other
// fields). Throws std::runtime_error for a "data:" line that is not the expected JSON.
std::optional<CompletionsChunk> parse_completions_line(std::string_view line);

// The message of an error answer ({"error": {"message"}} or {"object": "error", "message"}), else
// the body itself, cut short.
std::string completions_error_message(std::string_view body);

}  // namespace ds4::upstream
