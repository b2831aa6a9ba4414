// OpenAI Responses requests (POST /v1/responses, what Codex CLI speaks) -> the shared
// ChatRequest.
//
// Items are read in order into messages, tool calls and tool results; unknown keys are skipped,
// item and tool types we cannot render are left out and listed in `ignored` / `ignored_tools`.
// A reasoning item's encrypted_content written by this server (reasoning_token.hpp) carries the
// exact sampled reasoning. Field by field: docs/api.md §responses-requests.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gateway/protocol/chat_request.hpp"

namespace ds4::protocol {

struct ResponsesRequest {
  ChatRequest chat;  // instructions first (when given), then the input
  bool has_instructions = false;
  std::vector<std::string> message_paths;
  std::vector<std::string> ignored_tools;
  std::vector<std::string> ignored_items;
  std::optional<std::string> previous_response_id;
  bool reasoning_summary = false;  // reasoning.summary was set (auto/concise/detailed)
};

// Throws RequestError naming the JSON path.
ResponsesRequest parse_responses_request(const boost::json::value& body);

}  // namespace ds4::protocol
