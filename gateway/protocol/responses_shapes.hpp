// Builders for the OpenAI Responses JSON, as pure functions of plain structs.
//
//  * response: {id:"resp_…", object:"response", created_at, status: completed | incomplete |
//    failed, model, output:[items], usage, error (null or {code, message}), incomplete_details
//    (null or {reason:"max_output_tokens"}), previous_response_id, ds4d?}.
//  * items: reasoning {id:"rs_…", type:"reasoning", summary:[{type:"summary_text", text}],
//    encrypted_content: reasoning_token(exact bytes)}; message {id:"msg_…", type:"message",
//    status, role:"assistant", content:[{type:"output_text", text, annotations:[]}]};
//    function_call {id:"fc_…", type:"function_call", status, name, call_id, arguments}.
//  * usage: {input_tokens, input_tokens_details:{cached_tokens}, output_tokens,
//    output_tokens_details:{reasoning_tokens:0}, total_tokens, protocol_tokens}.
//  * stream: every event is "event: TYPE\ndata: {type, sequence_number, ...}\n\n" (no [DONE]).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/protocol/openai_shapes.hpp"

namespace ds4::protocol::responses {

enum class Status { InProgress, Completed, Incomplete, Failed };
const char* status_name(Status status);

boost::json::object usage_json(const openai::Usage& usage);

boost::json::object reasoning_item(std::string_view id, std::string_view reasoning, bool done);
boost::json::object message_item(std::string_view id, std::string_view text, bool done);
boost::json::object function_call_item(std::string_view id, std::string_view call_id, std::string_view name,
                                       std::string_view arguments, bool done);

struct ResponseMeta {
  std::string id;
  int64_t created_at = 0;
  std::string model;
  std::optional<std::string> previous_response_id;
};

// `usage` null: omitted (in-progress snapshots). `error_message` set for failed responses.
boost::json::object response_json(const ResponseMeta& meta, Status status, boost::json::array output,
                                  const openai::Usage* usage, const std::string& error_message = {},
                                  const openai::Ds4dExtension* extension = nullptr);

// "event: TYPE\ndata: JSON\n\n" with "type" and "sequence_number" first in the payload.
std::string sse_event(std::string_view type, uint64_t sequence_number, const boost::json::object& fields);

}  // namespace ds4::protocol::responses
