// OutputControls: the request parameters that shape the output itself rather than the
// conversation: response_format (JSON by constrained decoding), logit_bias and logprobs.
// docs/api-parameters.md §output lists each API's spelling; what is not implemented is a
// RequestError naming the parameter, never silently ignored.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ds4::protocol {

struct OutputControls {
  enum class Format { Text, JsonObject, JsonSchema };
  Format format = Format::Text;
  std::shared_ptr<const boost::json::value> schema;   // JsonSchema: the schema the output must match
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias in [-100, 100]
  bool logprobs = false;                              // per-token log-probabilities in the answer
  uint32_t top_logprobs = 0;                          // the most likely alternatives per token
  // How this API spells them, for errors found after parsing.
  std::string format_param = "response_format";
  std::string logprobs_param = "logprobs";

  bool json() const { return format != Format::Text; }
};

// OpenAI chat: response_format, logit_bias, logprobs (bool) and top_logprobs (0..20, needs
// logprobs). Throws RequestError.
void read_chat_output_controls(const boost::json::object& body, OutputControls& out);
// OpenAI completions: logit_bias, logprobs (an integer 0..5: the alternatives per token);
// best_of other than 1 and a non-empty suffix are rejected. Throws RequestError.
void read_completion_output_controls(const boost::json::object& body, OutputControls& out);
// OpenAI Responses: text.format ({"type":"text"|"json_object"|"json_schema", schema, ...}) and
// top_logprobs (0..20; output_text logprobs are returned when set). Throws RequestError.
void read_responses_output_controls(const boost::json::object& body, OutputControls& out);

}  // namespace ds4::protocol
