// Anthropic Messages requests (POST /v1/messages) -> the shared ChatRequest.
//
// The Messages API is one more spelling of the same conversation, so it is translated here into
// a ChatRequest and from there goes through the one renderer, the contract store and the DSML
// parser like OpenAI chat. Mapping (unknown keys are skipped, as Claude Code sends many):
//  * system: a string or text blocks ({"type":"text","text",cache_control?}); blocks are joined
//    with "\n"; a block starting with "x-anthropic-" (Claude Code's billing header) is dropped,
//    as ds4 does. It becomes the first System message (path "system").
//  * messages[i].role: user | assistant | system (Claude Code puts system-role messages inside
//    `messages`; they are hoisted into the system prompt like OpenAI system messages).
//  * content: a string or blocks. text -> content (text blocks joined with "\n\n");
//    thinking -> reasoning (signature ignored; the exact bytes are what the contract store
//    checks); redacted_thinking ignored; tool_use {id, name, input} -> a tool call whose
//    arguments are input's compact JSON; tool_result {tool_use_id, content (string, or text
//    and tool_reference blocks), is_error} -> a Tool message, emitted before the user text of
//    the same message (the order Anthropic requires); image/document -> RequestError (the
//    model reads text only).
//  * tools[i]: {name, description?, input_schema} -> {"name","description","parameters"}.
//    A tool with `defer_loading: true` is not rendered in the tools block and cannot be called
//    until a tool_result's {"type":"tool_reference","tool_name":N} block names it (Claude Code's
//    ToolSearch does so). The reference renders, inside that tool result, as
//    "<functions>\n<function>SCHEMA</function>\n</functions>" (one line per consecutive
//    reference; SCHEMA is the compact JSON the tools block uses), and the tool joins
//    ChatRequest::loaded_tools: callable from then on, while every token before the tool result
//    renders as before it was loaded, so the cached prefix stays valid. A reference to a name
//    not in `tools` is a RequestError at its tool_name.
//    Server tools with a versioned `type` other than "custom" (bash_20250124, web_search_…,
//    text_editor_…) have no client-side definition to render: left out, their names listed in
//    `ignored_tools` so the endpoint can log them at debug level.
//  * tool_choice: {"type":"auto"|"any"|"tool"(+name)|"none"} -> "auto" | "required" |
//    "function:NAME" | "none".
//  * thinking: {"type":"enabled",budget_tokens} / {"type":"adaptive"} -> on; {"type":"disabled"}
//    -> off; output_config.effort "max" -> Max, other efforts -> High; absent -> High (ds4's
//    default; the model is a reasoning model). reasoning_effort is honoured as in chat.
//  * max_tokens, stop_sequences, temperature (0..1), top_p, top_k, stream. metadata,
//    context_management, service_tier, container, mcp_servers: accepted and ignored.
// message_paths[k] is the client path of ChatRequest message k ("system", "messages[3]"), so
// contract violations and errors name the field the client sent.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "gateway/protocol/chat_request.hpp"

namespace ds4::protocol {

struct AnthropicRequest {
  ChatRequest chat;
  std::vector<std::string> message_paths;
  std::vector<std::string> ignored_tools;
};

// Throws RequestError naming the JSON path.
AnthropicRequest parse_anthropic_request(const boost::json::value& body);

}  // namespace ds4::protocol
