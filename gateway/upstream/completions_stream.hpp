#pragma once
// CompletionsStream: one job's answer from a vLLM or SGLang upstream (completions_wire.hpp),
// told to the job's sink as a local engine worker would tell it
// (docs/scale-out.md §vllm-and-sglang).
//
// The engine's token ids are what counts, not its text: the gateway decodes them with its own
// tokenizer, cuts the client's stop strings from the bytes (StopSequenceFilter, as locally) and
// replays each token through the job's token policy (PolicyCheck). A token the policy would not
// have allowed, or an id outside the vocabulary, ends the job with FinishReason::Error and a
// message naming the token and the upstream; what the client already has stays, the API closes
// the answer with its error shape. The usage's cached-token count is the engine's own
// (prompt_tokens_details.cached_tokens where it reports one, else 0).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/generation.hpp"
#include "gateway/serving/stop_sequence_filter.hpp"
#include "gateway/upstream/policy_check.hpp"

namespace ds4::upstream {

class CompletionsStream {
 public:
  // `job` and `tokenizer` must outlive the stream; `upstream` names the node in messages.
  CompletionsStream(const serving::GenerationJob& job, const serving::EngineBackend& tokenizer, std::string upstream);

  // One line of the SSE answer. false: stop reading (the job is over: a stop string, the consumer
  // stopped, the policy refused a token, "[DONE]"). Throws std::runtime_error for a malformed line.
  bool line(std::string_view line);
  // The answer ended (the connection closed): throws std::runtime_error when it ended before
  // saying how the generation finished.
  void close();

  bool committed() const { return committed_; }  // the sink heard on_prefilled
  bool over() const { return over_; }            // the result is final
  serving::GenerationResult& result() { return result_; }

 private:
  void take(serving::Token token, const struct ChunkLogprob* logprob);
  void finish(serving::FinishReason reason, std::string error = {});
  void release(const std::string& bytes);

  const serving::GenerationJob& job_;
  const serving::EngineBackend& tokenizer_;
  std::string upstream_;
  PolicyCheck check_;
  serving::StopSequenceFilter stops_;
  serving::GenerationResult result_;
  bool committed_ = false, over_ = false, ended_ = false;
  std::optional<std::string> finish_reason_;
  std::chrono::steady_clock::time_point start_, first_token_;
};

}  // namespace ds4::upstream
