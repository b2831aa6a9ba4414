// Builders for the OpenAI response JSON the gateway sends, as pure functions of plain structs.
//
// The shapes (chat.completion, chunks, text_completion, usage, error, our ds4d extension object)
// are docs/api.md §openai-response-shapes.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/protocol/contract_store.hpp"
#include "gateway/protocol/request_error.hpp"

namespace ds4::protocol::openai {

// `finish_reason` below is the wire value ("stop", "length", "tool_calls", "error"); the API
// layer maps how a turn ended onto it (gateway/api/turn_stream.hpp, openai_finish_reason).

struct ResponseMeta {
  std::string id;       // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;  // unix seconds
  std::string model;    // echoed from the request
};

struct Usage {
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t cached_tokens = 0;    // prompt tokens reused from a cache (read only)
  uint64_t protocol_tokens = 0;  // prompt tokens that are template, not client text
};

struct ContractReport {
  ContractMode mode = ContractMode::Warn;
  std::vector<ContractViolation> violations;
  size_t replayed_blocks = 0;
  size_t canonical_blocks = 0;
  size_t repaired_reasoning = 0;
};

struct CacheReport {
  std::string source;  // "live", "warm", "disk" or "none"
  uint64_t cached_tokens = 0;
  uint64_t prompt_tokens = 0;
};

// Exact speculative decoding of the turn: drafts verified, and those accepted.
struct SpeculationReport {
  uint64_t drafted_tokens = 0;
  uint64_t accepted_tokens = 0;
};

struct Ds4dExtension {
  std::optional<ContractReport> contract;
  std::optional<CacheReport> cache;
  std::optional<SpeculationReport> speculation;  // only when the turn drafted
};

struct ReportedToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct AssistantOutput {
  std::string content;
  std::optional<std::string> reasoning;
  std::vector<ReportedToolCall> tool_calls;
};

boost::json::object usage_json(const Usage& usage);
boost::json::object ds4d_json(const Ds4dExtension& extension);

boost::json::object chat_completion(const ResponseMeta& meta, const AssistantOutput& output,
                                    std::string_view finish_reason, const Usage& usage,
                                    const Ds4dExtension* extension = nullptr);

boost::json::object chat_chunk_role(const ResponseMeta& meta);
boost::json::object chat_chunk_content(const ResponseMeta& meta, std::string_view text);
boost::json::object chat_chunk_reasoning(const ResponseMeta& meta, std::string_view text);
boost::json::object chat_chunk_tool_call_begin(const ResponseMeta& meta, size_t index, std::string_view id,
                                               std::string_view name);
boost::json::object chat_chunk_tool_call_arguments(const ResponseMeta& meta, size_t index, std::string_view fragment);
boost::json::object chat_chunk_finish(const ResponseMeta& meta, std::string_view finish_reason,
                                      const Ds4dExtension* extension = nullptr);
boost::json::object chat_chunk_usage(const ResponseMeta& meta, const Usage& usage);

boost::json::object text_completion(const ResponseMeta& meta, std::string_view text, std::string_view finish_reason,
                                    const Usage& usage, const Ds4dExtension* extension = nullptr);
boost::json::object text_completion_chunk(const ResponseMeta& meta, std::string_view text,
                                          std::optional<std::string_view> finish_reason = std::nullopt);
boost::json::object text_completion_usage_chunk(const ResponseMeta& meta, const Usage& usage);

boost::json::object error_body(std::string_view message, std::string_view type,
                               std::optional<std::string_view> param = std::nullopt,
                               std::optional<std::string_view> code = std::nullopt);
boost::json::object request_error_body(const RequestError& error);  // 400
// 422 for ContractMode::Strict: message names every broken contract, message index and fix.
// `message_paths[i]`: the client's path of ChatRequest message i (APIs whose wire messages do not
// map one to one); missing entries are written "messages[i]".
boost::json::object contract_violation_body(const std::vector<ContractViolation>& violations,
                                            const std::vector<std::string>& message_paths = {});
// 400, code "context_length_exceeded", plus n_prompt_tokens / n_ctx as ds4 sends them.
boost::json::object context_length_body(uint64_t prompt_tokens, uint64_t context_tokens, std::string_view param);

std::string sse_data(const boost::json::object& payload);  // "data: <json>\n\n"
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace ds4::protocol::openai
