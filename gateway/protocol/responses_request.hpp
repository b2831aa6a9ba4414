// OpenAI Responses requests (POST /v1/responses, what Codex CLI speaks) -> the shared
// ChatRequest.
//
// Mapping (unknown keys skipped: Codex sends store, include, parallel_tool_calls, text,
// truncation, service_tier, which change nothing here; prompt_cache_key, else
// client_metadata.session_id, becomes the session hint):
//  * instructions -> the first System message (path "instructions").
//  * input: a string (one user message) or items, in order:
//      message {role: user|assistant|system|developer, content: string or parts of type
//        input_text | output_text | text | summary_text | reasoning_text; refusal parts are
//        text too; anything else (input_image, input_file) -> RequestError};
//      function_call / custom_tool_call {call_id (else id), name, arguments | input} -> a tool
//        call on the current assistant message (consecutive calls share one message, as they
//        were one sampled block);
//      function_call_output / custom_tool_call_output {call_id, output: string or parts} -> a
//        Tool message;
//      reasoning {summary[], content[], encrypted_content} -> reasoning of the next assistant
//        item; encrypted_content written by this server (reasoning_token.hpp) carries the exact
//        sampled reasoning and wins over the summary text, which is how a stateless client
//        (store:false) echoes the reasoning contract byte for byte. A reasoning item with no
//        assistant item after it becomes an empty assistant message;
//      other item types (web_search_call, local_shell_call, compaction, item_reference, ...)
//        are left out and listed in `ignored`.
//    An item without `type` but with `role` is a message.
//  * tools: {type:"function", name, description, parameters} -> {"name","description",
//    "parameters"}; other tool types (namespace, web_search, local_shell, custom, ...) are left
//    out of the tools block and listed in `ignored_tools`.
//  * tool_choice: "auto" | "none" | "required" | {type:"function", name}.
//  * reasoning.effort: none -> Off, max -> Max, the rest -> High; default High.
//  * max_output_tokens (or max_tokens), temperature, top_p, stream, previous_response_id.
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
