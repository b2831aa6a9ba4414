// OpenAI request parsing: boost::json values -> ChatRequest / CompletionRequest, with every
// rejection naming the JSON path of the field. See chat_request.hpp for the accepted shapes and
// the thinking mapping.
#include "gateway/protocol/chat_request.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "gateway/protocol/json_fields.hpp"
#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol {

namespace json = boost::json;
using namespace json_fields;

namespace {

// content: string | null | array of (string | {"type":"text","text":...}).
std::string text_content(const json::value& v, const std::string& path) {
  if (v.is_null()) return {};
  if (v.is_string()) return std::string(v.get_string());
  if (!v.is_array()) wrong_type(path, v, "a string, null or an array of text parts");
  std::string out;
  const auto& parts = v.get_array();
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& part = parts[i];
    std::string ppath = index_path(path, i);
    if (part.is_string()) {
      out += part.get_string();
      continue;
    }
    if (!part.is_object()) wrong_type(ppath, part, "a string or a content part object");
    const auto& obj = part.get_object();
    std::string type = "text";
    if (auto* t = obj.if_contains("type")) type = string_field(*t, ppath + ".type");
    if (type != "text" && type != "input_text" && type != "output_text")
      fail(ppath + ".type", "content part type '" + type + "' is not supported: this model reads text only");
    const auto* text = obj.if_contains("text");
    if (!text) fail(ppath + ".text", "text content part needs a 'text' string");
    out += string_field(*text, ppath + ".text");
  }
  return out;
}

Role parse_role(const json::value& v, const std::string& path) {
  std::string r = string_field(v, path);
  if (r == "system") return Role::System;
  if (r == "developer") return Role::Developer;
  if (r == "user") return Role::User;
  if (r == "assistant") return Role::Assistant;
  if (r == "tool" || r == "function") return Role::Tool;
  fail(path, "unknown role '" + r + "' (expected system, developer, user, assistant or tool)");
}

ToolCall parse_tool_call(const json::value& v, const std::string& path) {
  if (!v.is_object()) wrong_type(path, v, "an object");
  const auto& obj = v.get_object();
  ToolCall call;
  const auto* id = obj.if_contains("id");
  if (!id) fail(path + ".id", "tool call needs an 'id' (the id the server returned)");
  call.id = string_field(*id, path + ".id");
  if (auto* type = obj.if_contains("type")) {
    std::string t = string_field(*type, path + ".type");
    if (t != "function") fail(path + ".type", "tool call type must be 'function', got '" + t + "'");
  }
  const auto* fn = obj.if_contains("function");
  if (!fn) fail(path + ".function", "tool call needs a 'function' object");
  if (!fn->is_object()) wrong_type(path + ".function", *fn, "an object");
  const auto& f = fn->get_object();
  const auto* name = f.if_contains("name");
  if (!name) fail(path + ".function.name", "tool call function needs a 'name'");
  call.name = string_field(*name, path + ".function.name");
  const auto* args = f.if_contains("arguments");
  if (!args || args->is_null()) call.arguments = "{}";
  else if (args->is_string()) call.arguments = std::string(args->get_string());
  else call.arguments = json_scan::compact_text(*args);
  return call;
}

Message parse_message(const json::value& v, const std::string& path) {
  if (!v.is_object()) wrong_type(path, v, "a message object");
  const auto& obj = v.get_object();
  Message m;
  const auto* role = obj.if_contains("role");
  if (!role) fail(path + ".role", "message needs a 'role'");
  m.role = parse_role(*role, path + ".role");
  if (auto* c = obj.if_contains("content")) m.content = text_content(*c, path + ".content");
  const json::value* reasoning = obj.if_contains("reasoning_content");
  std::string rpath = path + ".reasoning_content";
  if (!reasoning || reasoning->is_null()) {
    reasoning = obj.if_contains("reasoning");
    rpath = path + ".reasoning";
  }
  if (reasoning && !reasoning->is_null()) m.reasoning = text_content(*reasoning, rpath);
  if (auto* calls = obj.if_contains("tool_calls"); calls && !calls->is_null()) {
    std::string cpath = path + ".tool_calls";
    if (!calls->is_array()) wrong_type(cpath, *calls, "an array");
    if (m.role != Role::Assistant && !calls->get_array().empty())
      fail(cpath, "only assistant messages carry tool_calls");
    const auto& arr = calls->get_array();
    for (size_t i = 0; i < arr.size(); ++i) m.tool_calls.push_back(parse_tool_call(arr[i], index_path(cpath, i)));
  }
  if (auto* id = obj.if_contains("tool_call_id"); id && !id->is_null())
    m.tool_call_id = string_field(*id, path + ".tool_call_id");
  return m;
}

json::object parse_tool(const json::value& v, const std::string& path) {
  if (!v.is_object()) wrong_type(path, v, "a tool object");
  const auto& obj = v.get_object();
  json::object fn;
  std::string fpath = path;
  if (auto* inner = obj.if_contains("function")) {
    if (auto* type = obj.if_contains("type")) {
      std::string t = string_field(*type, path + ".type");
      if (t != "function") fail(path + ".type", "tool type must be 'function', got '" + t + "'");
    }
    fpath = path + ".function";
    if (!inner->is_object()) wrong_type(fpath, *inner, "an object");
    fn = inner->get_object();
  } else {
    fn = obj;
  }
  const auto* name = fn.if_contains("name");
  if (!name) fail(fpath + ".name", "tool needs a function 'name'");
  if (string_field(*name, fpath + ".name").empty()) fail(fpath + ".name", "tool name must not be empty");
  if (const auto* params = present(fn, "parameters")) object_at(*params, fpath + ".parameters", "a JSON schema object");
  return fn;
}

std::vector<std::string> parse_stop(const json::value& v) {
  std::vector<std::string> stops;
  if (v.is_null()) return stops;
  if (v.is_string()) {
    if (!v.get_string().empty()) stops.emplace_back(v.get_string());
    return stops;
  }
  if (!v.is_array()) wrong_type("stop", v, "a string or an array of strings");
  const auto& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string s = string_field(arr[i], index_path("stop", i));
    if (!s.empty()) stops.push_back(std::move(s));
  }
  return stops;
}

// Collects the thinking controls shared by both endpoints; apply() resolves them.
struct ThinkingControls {
  std::optional<bool> enabled;
  std::optional<Thinking> effort;

  void read(const json::object& obj) {
    if (auto* t = obj.if_contains("thinking"); t && !t->is_null()) {
      if (t->is_bool()) {
        enabled = t->get_bool();
      } else if (t->is_object()) {
        if (auto* type = t->get_object().if_contains("type"); type && !type->is_null()) {
          std::string s = string_field(*type, "thinking.type");
          if (s == "enabled") enabled = true;
          else if (s == "disabled") enabled = false;
          else fail("thinking.type", "thinking.type must be 'enabled' or 'disabled', got '" + s + "'");
        }
      } else {
        wrong_type("thinking", *t, "a boolean or {\"type\":\"enabled\"|\"disabled\"}");
      }
    }
    if (auto* t = obj.if_contains("think"); t && !t->is_null()) enabled = bool_field(*t, "think");
    if (auto* e = obj.if_contains("reasoning_effort"); e && !e->is_null()) {
      std::string s = string_field(*e, "reasoning_effort");
      if (s == "none") effort = Thinking::Off;
      else if (s == "minimal" || s == "low" || s == "medium" || s == "high" || s == "xhigh") effort = Thinking::High;
      else if (s == "max") effort = Thinking::Max;
      else
        fail("reasoning_effort",
             "reasoning_effort must be none, minimal, low, medium, high, xhigh or max, got '" + s + "'");
    }
  }

  Thinking apply(const std::string& model) const {
    bool on = true;
    if (enabled) on = *enabled;
    else if (model == "deepseek-chat") on = false;
    else if (model == "deepseek-reasoner") on = true;
    if (!on || effort == Thinking::Off) return Thinking::Off;
    return effort == Thinking::Max ? Thinking::Max : Thinking::High;
  }
};

void read_sampling(const json::object& obj, SamplingParams& s) {
  if (auto* v = obj.if_contains("temperature"); v && !v->is_null()) s.temperature = ranged(*v, "temperature", 0, 2);
  if (auto* v = obj.if_contains("top_p"); v && !v->is_null()) s.top_p = ranged(*v, "top_p", 0, 1);
  if (auto* v = obj.if_contains("min_p"); v && !v->is_null()) s.min_p = ranged(*v, "min_p", 0, 1);
  if (auto* v = obj.if_contains("top_k"); v && !v->is_null())
    s.top_k = static_cast<uint32_t>(integer_field(*v, "top_k", 0, std::numeric_limits<uint32_t>::max()));
  if (auto* v = obj.if_contains("seed"); v && !v->is_null()) {
    if (v->is_int64() && v->get_int64() < 0) s.seed = static_cast<uint64_t>(v->get_int64());  // two's complement
    else s.seed = integer_field(*v, "seed", 0, std::numeric_limits<uint64_t>::max());
  }
  if (auto* v = obj.if_contains("speculation"); v && !v->is_null()) s.speculation = bool_field(*v, "speculation");
}

std::optional<uint32_t> read_max_tokens(const json::object& obj, bool chat) {
  std::optional<uint32_t> out;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!chat && std::string_view(key) == "max_completion_tokens") continue;
    if (auto* v = obj.if_contains(key); v && !v->is_null())
      out = static_cast<uint32_t>(integer_field(*v, key, 0, std::numeric_limits<uint32_t>::max()));
  }
  return out;
}

void read_stream(const json::object& obj, bool& stream, bool& include_usage) {
  if (auto* v = obj.if_contains("stream"); v && !v->is_null()) stream = bool_field(*v, "stream");
  if (auto* v = obj.if_contains("stream_options"); v && !v->is_null()) {
    if (!v->is_object()) wrong_type("stream_options", *v, "an object");
    if (auto* u = v->get_object().if_contains("include_usage"); u && !u->is_null())
      include_usage = bool_field(*u, "stream_options.include_usage");
  }
}

void check_n(const json::object& obj) {
  if (auto* v = obj.if_contains("n"); v && !v->is_null()) {
    if (integer_field(*v, "n", 1, 1) != 1) fail("n", "'n' must be 1");
  }
}

// The generation controls chat and completion requests share, read in this order (so the first
// bad field is the one reported): thinking, sampling, max_tokens (chat also accepts
// max_completion_tokens), stop, stream/stream_options, n.
template <class Request>
void read_generation_controls(const json::object& obj, bool chat, Request& req) {
  ThinkingControls thinking;
  thinking.read(obj);
  req.thinking = thinking.apply(req.model);
  read_sampling(obj, req.sampling);
  req.max_tokens = read_max_tokens(obj, chat);
  if (auto* v = obj.if_contains("stop")) req.stop = parse_stop(*v);
  read_stream(obj, req.stream, req.include_usage);
  check_n(obj);
}

const json::object& top_object(const json::value& body) {
  if (!body.is_object()) fail("", "request body must be a JSON object, got " + kind_of(body));
  return body.get_object();
}

std::string read_model(const json::object& obj) {
  if (auto* v = obj.if_contains("model"); v && !v->is_null()) return string_field(*v, "model");
  return {};
}

}  // namespace

ChatRequest parse_chat_request(const json::value& body) {
  const auto& obj = top_object(body);
  ChatRequest req;
  req.model = read_model(obj);
  const auto* messages = obj.if_contains("messages");
  if (!messages) fail("messages", "missing 'messages'");
  if (!messages->is_array()) wrong_type("messages", *messages, "an array");
  const auto& arr = messages->get_array();
  if (arr.empty()) fail("messages", "'messages' must contain at least one message");
  req.messages.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) req.messages.push_back(parse_message(arr[i], index_path("messages", i)));

  if (auto* tools = obj.if_contains("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) wrong_type("tools", *tools, "an array");
    const auto& t = tools->get_array();
    for (size_t i = 0; i < t.size(); ++i) req.tools.push_back(parse_tool(t[i], index_path("tools", i)));
  }
  if (auto* choice = obj.if_contains("tool_choice"); choice && !choice->is_null()) {
    if (choice->is_string()) {
      std::string c(choice->get_string());
      if (c != "none" && c != "auto" && c != "required")
        fail("tool_choice", "tool_choice must be none, auto, required or a function object, got '" + c + "'");
      req.tool_choice = c;
    } else if (choice->is_object()) {
      const auto& c = choice->get_object();
      const auto* fn = c.if_contains("function");
      const json::value* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
      if (!name) fail("tool_choice.function.name", "a forced tool_choice needs function.name");
      req.tool_choice = "function:" + string_field(*name, "tool_choice.function.name");
    } else {
      wrong_type("tool_choice", *choice, "a string or an object");
    }
  }

  read_generation_controls(obj, true, req);
  read_chat_output_controls(obj, req.output);
  if (const auto* k = obj.if_contains("prompt_cache_key"); k && !k->is_null())
    req.session_hint = json_fields::string_field(*k, "prompt_cache_key");
  return req;
}

CompletionRequest parse_completion_request(const json::value& body) {
  const auto& obj = top_object(body);
  CompletionRequest req;
  req.model = read_model(obj);
  const auto* prompt = obj.if_contains("prompt");
  if (!prompt || prompt->is_null()) fail("prompt", "missing 'prompt'");
  auto token_ids = [](const json::array& arr, const std::string& path) {
    std::vector<int32_t> ids;
    ids.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); ++i)
      ids.push_back(
          static_cast<int32_t>(integer_field(arr[i], index_path(path, i), 0, std::numeric_limits<int32_t>::max())));
    return ids;
  };
  if (prompt->is_string()) {
    req.prompt = std::string(prompt->get_string());
  } else if (prompt->is_array()) {
    const auto& arr = prompt->get_array();
    if (arr.empty()) fail("prompt", "'prompt' must not be empty");
    if (arr[0].is_string() || arr[0].is_array()) {
      if (arr.size() != 1) fail("prompt", "only one prompt per request is supported");
      if (arr[0].is_string()) req.prompt = std::string(arr[0].get_string());
      else req.prompt = token_ids(arr[0].get_array(), "prompt[0]");
    } else {
      req.prompt = token_ids(arr, "prompt");
    }
  } else {
    wrong_type("prompt", *prompt, "a string or an array of token ids");
  }
  if (auto* v = obj.if_contains("raw"); v && !v->is_null()) req.raw = bool_field(*v, "raw");
  read_generation_controls(obj, false, req);
  read_completion_output_controls(obj, req.output);
  if (auto* v = obj.if_contains("echo"); v && !v->is_null() && bool_field(*v, "echo"))
    fail("echo", "'echo' is not supported");
  return req;
}

const char* role_name(Role role) {
  switch (role) {
    case Role::System: return "system";
    case Role::Developer: return "developer";
    case Role::User: return "user";
    case Role::Assistant: return "assistant";
    case Role::Tool: return "tool";
  }
  return "user";
}

const char* thinking_name(Thinking thinking) {
  switch (thinking) {
    case Thinking::Off: return "off";
    case Thinking::High: return "high";
    case Thinking::Max: return "max";
  }
  return "high";
}

std::vector<boost::json::object> ChatRequest::callable_tools() const {
  std::vector<boost::json::object> all = tools;
  all.insert(all.end(), loaded_tools.begin(), loaded_tools.end());
  return all;
}

}  // namespace ds4::protocol
