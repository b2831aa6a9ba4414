// Identifier bounds on request bodies. See request_limits.hpp.
#include "gateway/api/request_limits.hpp"

#include <string>

#include "gateway/protocol/request_error.hpp"

namespace ds4::http {
namespace json = boost::json;
namespace {

// Only strings are measured: a value of the wrong type is the endpoint parser's to report.
void bound(const json::object& obj, std::string_view key, const std::string& parent, size_t limit) {
  const json::value* v = obj.if_contains(key);
  if (!v || !v->is_string() || v->get_string().size() <= limit) return;
  const std::string path = parent.empty() ? std::string(key) : parent + "." + std::string(key);
  throw protocol::RequestError(path, "'" + path + "' is " + std::to_string(v->get_string().size()) +
                                         " bytes; at most " + std::to_string(limit) + " are accepted");
}

const json::object* object_in(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

// Calls fn(element, path) for each object element of the array at `key`.
template <class Fn>
void each_object(const json::object& obj, std::string_view key, const std::string& parent, Fn fn) {
  const json::value* v = obj.if_contains(key);
  if (!v || !v->is_array()) return;
  const std::string base = parent.empty() ? std::string(key) : parent + "." + std::string(key);
  const json::array& arr = v->get_array();
  for (size_t i = 0; i < arr.size(); ++i)
    if (arr[i].is_object()) fn(arr[i].get_object(), base + "[" + std::to_string(i) + "]");
}

void check_stops(const json::object& body, std::string_view key) {
  const json::value* v = body.if_contains(key);
  if (!v) return;
  if (v->is_string()) return bound(body, key, "", kMaxStopStringBytes);
  if (!v->is_array()) return;
  const json::array& arr = v->get_array();
  if (arr.size() > kMaxStopStrings)
    throw protocol::RequestError(std::string(key), "'" + std::string(key) + "' has " + std::to_string(arr.size()) +
                                                       " entries; at most " + std::to_string(kMaxStopStrings) +
                                                       " are accepted");
  for (size_t i = 0; i < arr.size(); ++i)
    if (arr[i].is_string() && arr[i].get_string().size() > kMaxStopStringBytes)
      throw protocol::RequestError(std::string(key) + "[" + std::to_string(i) + "]",
                                   "a stop string is " + std::to_string(arr[i].get_string().size()) +
                                       " bytes; at most " + std::to_string(kMaxStopStringBytes) + " are accepted");
}

void check_tool(const json::object& tool, const std::string& path) {
  bound(tool, "name", path, kMaxNameBytes);
  if (const json::object* fn = object_in(tool, "function")) bound(*fn, "name", path + ".function", kMaxNameBytes);
  each_object(tool, "tools", path, check_tool);  // a Responses namespace of tools
}

void check_message(const json::object& m, const std::string& path) {
  bound(m, "name", path, kMaxNameBytes);
  bound(m, "tool_call_id", path, kMaxIdBytes);
  each_object(m, "tool_calls", path, [](const json::object& call, const std::string& cpath) {
    bound(call, "id", cpath, kMaxIdBytes);
    if (const json::object* fn = object_in(call, "function")) bound(*fn, "name", cpath + ".function", kMaxNameBytes);
  });
  // Anthropic tool_use / tool_result blocks.
  each_object(m, "content", path, [](const json::object& block, const std::string& bpath) {
    bound(block, "id", bpath, kMaxIdBytes);
    bound(block, "name", bpath, kMaxNameBytes);
    bound(block, "tool_use_id", bpath, kMaxIdBytes);
  });
}

}  // namespace

void check_request_limits(const json::object& body) {
  bound(body, "model", "", kMaxNameBytes);
  for (std::string_view key : {"user", "previous_response_id", "prompt_cache_key", "safety_identifier"})
    bound(body, key, "", kMaxIdBytes);
  if (const json::object* m = object_in(body, "metadata")) bound(*m, "user_id", "metadata", kMaxIdBytes);
  if (const json::object* m = object_in(body, "client_metadata"))
    bound(*m, "session_id", "client_metadata", kMaxIdBytes);
  check_stops(body, "stop");
  check_stops(body, "stop_sequences");
  each_object(body, "tools", "", check_tool);
  if (const json::object* choice = object_in(body, "tool_choice")) check_tool(*choice, "tool_choice");
  each_object(body, "messages", "", check_message);
  // Responses input items: function_call (id, call_id, name), function_call_output (call_id), messages.
  each_object(body, "input", "", [](const json::object& item, const std::string& path) {
    bound(item, "id", path, kMaxIdBytes);
    bound(item, "call_id", path, kMaxIdBytes);
    check_message(item, path);
  });
}

}  // namespace ds4::http
