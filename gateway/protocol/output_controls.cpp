// Parsing of response_format, logit_bias and logprobs. See output_controls.hpp.
#include "gateway/protocol/output_controls.hpp"

#include <charconv>
#include <limits>

#include "gateway/protocol/json_fields.hpp"

namespace ds4::protocol {

namespace json = boost::json;
using namespace json_fields;

namespace {

// {"type":"json_schema", ...}: the schema is `schema` (Responses text.format) or
// `json_schema.schema` (chat response_format). `path` names the format object.
void read_format(const json::value& v, const std::string& path, bool nested_schema, OutputControls& out) {
  const json::object& f = object_at(v, path, "a format object");
  const std::string type = required_string(f, "type", path + ".type", "a format needs a 'type'");
  if (type == "text") {
    out.format = OutputControls::Format::Text;
    return;
  }
  if (type == "json_object") {
    out.format = OutputControls::Format::JsonObject;
    return;
  }
  if (type != "json_schema")
    fail(path + ".type", "format type must be text, json_object or json_schema, got '" + type + "'");
  const json::object* holder = &f;
  std::string holder_path = path;
  if (nested_schema) {
    const json::value* js = present(f, "json_schema");
    if (!js) fail(path + ".json_schema", "a json_schema format needs a 'json_schema' object");
    holder_path = path + ".json_schema";
    holder = &object_at(*js, holder_path, "an object");
  }
  const json::value* schema = present(*holder, "schema");
  if (!schema) fail(holder_path + ".schema", "a json_schema format needs a 'schema'");
  object_at(*schema, holder_path + ".schema", "a JSON schema object");
  out.format = OutputControls::Format::JsonSchema;
  out.schema = std::make_shared<const json::value>(*schema);
}

// {"<token id>": bias}: ids as decimal strings, as OpenAI keys them; bias in [-100, 100].
void read_logit_bias(const json::object& body, OutputControls& out) {
  const json::value* v = present(body, "logit_bias");
  if (!v) return;
  const json::object& bias = object_at(*v, "logit_bias", "an object of token id -> bias");
  for (const auto& kv : bias) {
    const std::string path = member_path("logit_bias", kv.key());
    int32_t id = -1;
    const auto key = kv.key();
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0)
      fail(path,
           "logit_bias keys must be token ids (non-negative integers as strings), got '" + std::string(key) + "'");
    out.logit_bias.emplace_back(id, static_cast<float>(ranged(kv.value(), path, -100, 100)));
  }
}

uint32_t read_top_logprobs(const json::object& body) {
  const json::value* v = present(body, "top_logprobs");
  return v ? static_cast<uint32_t>(integer_field(*v, "top_logprobs", 0, 20)) : 0;
}

}  // namespace

void read_chat_output_controls(const json::object& body, OutputControls& out) {
  if (const json::value* f = present(body, "response_format")) read_format(*f, "response_format", true, out);
  read_logit_bias(body, out);
  if (const json::value* v = present(body, "logprobs")) out.logprobs = bool_field(*v, "logprobs");
  out.top_logprobs = read_top_logprobs(body);
  if (out.top_logprobs > 0 && !out.logprobs) fail("top_logprobs", "top_logprobs needs logprobs: true");
}

void read_completion_output_controls(const json::object& body, OutputControls& out) {
  read_logit_bias(body, out);
  if (const json::value* v = present(body, "logprobs")) {
    out.top_logprobs = static_cast<uint32_t>(integer_field(*v, "logprobs", 0, 5));
    out.logprobs = true;
  }
  if (const json::value* v = present(body, "best_of"); v && integer_field(*v, "best_of", 1, 20) != 1)
    fail("best_of", "'best_of' other than 1 is not supported (one completion per request)");
  if (const json::value* v = present(body, "suffix"); v && !string_field(*v, "suffix").empty())
    fail("suffix", "'suffix' is not supported (the model does not fill in the middle)");
}

void read_responses_output_controls(const json::object& body, OutputControls& out) {
  if (const json::value* t = present(body, "text")) {
    const json::object& text = object_at(*t, "text", "an object");
    if (const json::value* f = present(text, "format")) read_format(*f, "text.format", false, out);
  }
  out.format_param = "text.format";
  out.logprobs_param = "top_logprobs";
  out.top_logprobs = read_top_logprobs(body);
  out.logprobs = out.top_logprobs > 0;
}

}  // namespace ds4::protocol
