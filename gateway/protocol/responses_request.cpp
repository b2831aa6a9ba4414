// OpenAI Responses request parsing. See responses_request.hpp for the mapping.
#include "gateway/protocol/responses_request.hpp"

#include "gateway/protocol/json_fields.hpp"
#include "gateway/protocol/json_scan.hpp"
#include "gateway/protocol/reasoning_token.hpp"

namespace ds4::protocol {

namespace json = boost::json;
using namespace json_fields;

namespace {

// A string, or parts whose text is joined without separator (as OpenAI chat content parts).
std::string parts_text(const json::value& v, const std::string& path) {
  if (v.is_null()) return {};
  if (v.is_string()) return std::string(v.get_string());
  if (!v.is_array()) wrong_type(path, v, "a string or an array of content parts");
  std::string out;
  const auto& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string ppath = index_path(path, i);
    const auto& part = object_at(arr[i], ppath, "a content part object");
    std::string type = optional_string(part, "type", ppath);
    if (type == "refusal") {
      out += optional_string(part, "refusal", ppath);
      continue;
    }
    if (type != "input_text" && type != "output_text" && type != "text" && type != "summary_text" &&
        type != "reasoning_text")
      fail(ppath + ".type", "content part type '" + type + "' is not supported: this model reads text only");
    out += required_string(part, "text", ppath, "text part needs a 'text' string");
  }
  return out;
}

class InputReader {
 public:
  explicit InputReader(ResponsesRequest& out) : out_(out) {}

  void item(const json::value& v, const std::string& path) {
    const auto& obj = object_at(v, path, "an input item object");
    std::string type = optional_string(obj, "type", path);
    if (type.empty() && obj.contains("role")) type = "message";
    if (type == "message") {
      message(obj, path);
    } else if (type == "function_call" || type == "custom_tool_call") {
      ToolCall call;
      call.id = optional_string(obj, "call_id", path);
      if (call.id.empty()) call.id = optional_string(obj, "id", path);
      if (call.id.empty()) fail(path + ".call_id", "a function_call item needs the 'call_id' the server returned");
      call.name = optional_string(obj, "name", path);
      if (call.name.empty()) fail(path + ".name", "a function_call item needs a 'name'");
      const json::value* args = present(obj, type == "function_call" ? "arguments" : "input");
      if (!args) call.arguments = "{}";
      else if (args->is_string()) call.arguments = std::string(args->get_string());
      else call.arguments = json_scan::compact_text(*args);
      Message& m = assistant(path);
      m.tool_calls.push_back(std::move(call));
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      flush_reasoning();
      Message t;
      t.role = Role::Tool;
      t.tool_call_id = optional_string(obj, "call_id", path);
      if (t.tool_call_id.empty()) fail(path + ".call_id", "a function_call_output item needs a 'call_id'");
      if (const auto* o = obj.if_contains("output")) t.content = parts_text(*o, member_path(path, "output"));
      push(std::move(t), path);
    } else if (type == "reasoning") {
      flush_reasoning();
      std::string text;
      if (const auto* enc = obj.if_contains("encrypted_content"); enc && enc->is_string()) {
        if (auto exact = decode_reasoning_token(enc->get_string())) {
          pending_reasoning_ = std::move(*exact);
          pending_path_ = path;
          return;
        }
      }
      for (const char* key : {"content", "summary"}) {
        const auto* parts = present(obj, key);
        if (!parts) continue;
        std::string t = parts_text(*parts, member_path(path, key));
        if (!t.empty()) {
          text = std::move(t);
          break;
        }
      }
      pending_reasoning_ = std::move(text);
      pending_path_ = path;
    } else {
      out_.ignored_items.push_back(type.empty() ? path : type);
    }
  }

  void finish() { flush_reasoning(); }

 private:
  void push(Message m, const std::string& path) {
    out_.chat.messages.push_back(std::move(m));
    out_.message_paths.push_back(path);
    last_call_holder_ = false;
  }

  // The assistant message a function_call joins: the previous one when it holds calls and
  // nothing came between, else a new one (taking the pending reasoning).
  Message& assistant(const std::string& path) {
    if (last_call_holder_ && !pending_reasoning_) return out_.chat.messages.back();
    Message m;
    m.role = Role::Assistant;
    m.reasoning = std::move(pending_reasoning_);
    pending_reasoning_.reset();
    push(std::move(m), path);
    last_call_holder_ = true;
    return out_.chat.messages.back();
  }

  void flush_reasoning() {
    if (!pending_reasoning_) return;
    Message m;
    m.role = Role::Assistant;
    m.reasoning = std::move(pending_reasoning_);
    pending_reasoning_.reset();
    push(std::move(m), pending_path_);
  }

  void message(const json::object& obj, const std::string& path) {
    std::string role = required_string(obj, "role", path, "a message item needs a 'role'");
    Message m;
    if (role == "user") m.role = Role::User;
    else if (role == "assistant") m.role = Role::Assistant;
    else if (role == "system") m.role = Role::System;
    else if (role == "developer") m.role = Role::Developer;
    else fail(path + ".role", "unknown role '" + role + "' (expected user, assistant, system or developer)");
    if (const auto* c = obj.if_contains("content")) m.content = parts_text(*c, member_path(path, "content"));
    if (m.role == Role::Assistant) {
      m.reasoning = std::move(pending_reasoning_);
      pending_reasoning_.reset();
      push(std::move(m), path);
      last_call_holder_ = true;  // calls right after this message belong to it
      return;
    }
    if (m.role == Role::User) flush_reasoning();
    push(std::move(m), path);
  }

  ResponsesRequest& out_;
  std::optional<std::string> pending_reasoning_;
  std::string pending_path_;
  bool last_call_holder_ = false;
};

void read_tools(const json::object& obj, ResponsesRequest& out) {
  const auto* tools = present(obj, "tools");
  if (!tools) return;
  if (!tools->is_array()) wrong_type("tools", *tools, "an array");
  const auto& arr = tools->get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = index_path("tools", i);
    const auto& t = object_at(arr[i], path, "a tool object");
    std::string type = optional_string(t, "type", path);
    if (type != "function") {
      std::string name = optional_string(t, "name", path);
      out.ignored_tools.push_back(name.empty() ? type : type + ":" + name);
      continue;
    }
    std::string name = optional_string(t, "name", path);
    if (name.empty()) fail(path + ".name", "a function tool needs a 'name'");
    json::object fn{{"name", name}};
    if (present(t, "description")) fn["description"] = optional_string(t, "description", path);
    if (const auto* p = present(t, "parameters"))
      fn["parameters"] = object_at(*p, path + ".parameters", "a JSON schema object");
    out.chat.tools.push_back(std::move(fn));
  }
}

void read_tool_choice(const json::object& obj, ChatRequest& chat) {
  const auto* v = present(obj, "tool_choice");
  if (!v) return;
  if (v->is_string()) {
    std::string c(v->get_string());
    if (c != "none" && c != "auto" && c != "required")
      fail("tool_choice",
           "tool_choice must be none, auto, required or {\"type\":\"function\",\"name\":N}, got '" + c + "'");
    chat.tool_choice = c;
    return;
  }
  const auto& o = object_at(*v, "tool_choice", "a string or an object");
  std::string type = optional_string(o, "type", "tool_choice");
  if (type != "function")
    fail("tool_choice.type", "a forced tool_choice must have type 'function', got '" + type + "'");
  std::string name = optional_string(o, "name", "tool_choice");
  if (name.empty()) fail("tool_choice.name", "a forced tool_choice needs the function's 'name'");
  chat.tool_choice = "function:" + name;
}

}  // namespace

ResponsesRequest parse_responses_request(const json::value& body) {
  if (!body.is_object()) fail("", "request body must be a JSON object, got " + kind_of(body));
  const auto& obj = body.get_object();
  ResponsesRequest out;
  ChatRequest& chat = out.chat;
  chat.model = optional_string(obj, "model", "");

  {
    std::string text = optional_string(obj, "instructions", "");
    if (!text.empty()) {
      Message m;
      m.role = Role::System;
      m.content = std::move(text);
      chat.messages.push_back(std::move(m));
      out.message_paths.push_back("instructions");
      out.has_instructions = true;
    }
  }
  if (present(obj, "previous_response_id")) out.previous_response_id = optional_string(obj, "previous_response_id", "");

  const auto* input = obj.if_contains("input");
  if (!input || input->is_null()) fail("input", "missing 'input'");
  if (input->is_string()) {
    Message m;
    m.role = Role::User;
    m.content = std::string(input->get_string());
    chat.messages.push_back(std::move(m));
    out.message_paths.push_back("input");
  } else if (input->is_array()) {
    InputReader reader(out);
    const auto& arr = input->get_array();
    for (size_t i = 0; i < arr.size(); ++i) reader.item(arr[i], index_path("input", i));
    reader.finish();
  } else {
    wrong_type("input", *input, "a string or an array of items");
  }
  if (chat.messages.size() == (out.has_instructions ? 1u : 0u))
    fail("input", "'input' holds no message, function_call_output or other renderable item");

  read_tools(obj, out);
  read_tool_choice(obj, chat);
  // Codex's per-conversation cache key, else its session id: the warm-state routing hint.
  chat.session_hint = optional_string(obj, "prompt_cache_key", "");
  if (const auto* cm = present(obj, "client_metadata"); cm && chat.session_hint.empty() && cm->is_object())
    if (const auto* id = present(cm->get_object(), "session_id"); id && id->is_string())
      chat.session_hint = std::string(id->get_string());

  if (const auto* r = present(obj, "reasoning")) {
    const auto& ro = object_at(*r, "reasoning", "an object");
    if (present(ro, "effort")) {
      std::string s = optional_string(ro, "effort", "reasoning");
      if (s == "none") chat.thinking = Thinking::Off;
      else if (s == "max") chat.thinking = Thinking::Max;
      else if (s == "minimal" || s == "low" || s == "medium" || s == "high" || s == "xhigh")
        chat.thinking = Thinking::High;
      else
        fail("reasoning.effort",
             "reasoning.effort must be none, minimal, low, medium, high, xhigh or max, got '" + s + "'");
    }
    if (present(ro, "summary")) {
      optional_string(ro, "summary", "reasoning");  // auto | concise | detailed: checked, all alike
      out.reasoning_summary = true;
    }
  }
  for (const char* key : {"max_tokens", "max_output_tokens"})
    if (auto n = optional_u32(obj, key, "")) chat.max_tokens = n;
  if (const auto* v = present(obj, "temperature")) chat.sampling.temperature = ranged(*v, "temperature", 0, 2);
  if (const auto* v = present(obj, "top_p")) chat.sampling.top_p = ranged(*v, "top_p", 0, 1);
  if (const auto* v = present(obj, "speculation")) chat.sampling.speculation = bool_field(*v, "speculation");
  if (const auto* v = present(obj, "stream")) chat.stream = bool_field(*v, "stream");
  read_responses_output_controls(obj, chat.output);
  return out;
}

}  // namespace ds4::protocol
