// Anthropic Messages requests (POST /v1/messages) -> the shared ChatRequest.
//
// The Messages API is one more spelling of the same conversation, so it is translated here into
// a ChatRequest and from there goes through the one renderer, the contract store and the DSML
// parser like OpenAI chat. Unknown keys are skipped; image/document blocks are a RequestError.
// message_paths[k] is the client path of ChatRequest message k ("system", "messages[3]"), so
// contract violations and errors name the field the client sent. Field by field, deferred tools
// and server tools: docs/api.md §anthropic-messages-requests.
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
