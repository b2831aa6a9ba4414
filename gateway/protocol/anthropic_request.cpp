// Anthropic Messages request parsing. See anthropic_request.hpp for the mapping.
#include "gateway/protocol/anthropic_request.hpp"

#include <limits>

#include "gateway/protocol/json_fields.hpp"
#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol {

namespace json = boost::json;
using namespace json_fields;

namespace {

const json::object& object_at(const json::value& v, const std::string& path, const char* what) {
  if (!v.is_object()) wrong_type(path, v, what);
  return v.get_object();
}

std::string block_type(const json::object& block, const std::string& path) {
  const auto* t = block.if_contains("type");
  if (!t) fail(path + ".type", "content block needs a 'type'");
  return string_field(*t, path + ".type");
}

// A tool_result's content: a string or text blocks (joined with "\n\n").
std::string tool_result_text(const json::value& v, const std::string& path) {
  if (v.is_null()) return {};
  if (v.is_string()) return std::string(v.get_string());
  if (!v.is_array()) wrong_type(path, v, "a string or an array of text blocks");
  std::string out;
  const auto& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string bpath = index_path(path, i);
    const auto& block = object_at(arr[i], bpath, "a content block object");
    std::string type = block_type(block, bpath);
    if (type != "text")
      fail(bpath + ".type", "tool_result block type '" + type + "' is not supported: this model reads text only");
    const auto* text = block.if_contains("text");
    if (!text) fail(bpath + ".text", "text block needs a 'text' string");
    if (!out.empty()) out += "\n\n";
    out += string_field(*text, bpath + ".text");
  }
  return out;
}

std::string system_text(const json::value& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return std::string(v.get_string());
  if (!v.is_array()) wrong_type("system", v, "a string or an array of text blocks");
  std::string out;
  const auto& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string bpath = index_path("system", i);
    const auto& block = object_at(arr[i], bpath, "a text block object");
    if (block_type(block, bpath) != "text") fail(bpath + ".type", "system blocks must be of type 'text'");
    const auto* text = block.if_contains("text");
    if (!text) fail(bpath + ".text", "text block needs a 'text' string");
    std::string t = string_field(*text, bpath + ".text");
    if (t.rfind("x-anthropic-", 0) == 0) continue;  // client billing header, not instructions
    if (!out.empty()) out += "\n";
    out += t;
  }
  return out;
}

// One wire message -> one or more ChatRequest messages (tool results first, then the text).
void parse_message(const json::value& v, const std::string& path, AnthropicRequest& out) {
  const auto& obj = object_at(v, path, "a message object");
  const auto* role_v = obj.if_contains("role");
  if (!role_v) fail(path + ".role", "message needs a 'role'");
  std::string role = string_field(*role_v, path + ".role");
  Role r;
  if (role == "user") r = Role::User;
  else if (role == "assistant") r = Role::Assistant;
  else if (role == "system") r = Role::System;
  else fail(path + ".role", "unknown role '" + role + "' (expected user, assistant or system)");

  Message m;
  m.role = r;
  std::vector<Message> tool_results;
  const auto* content = obj.if_contains("content");
  if (!content) fail(path + ".content", "message needs 'content'");
  std::string cpath = path + ".content";
  if (content->is_string()) {
    m.content = std::string(content->get_string());
  } else if (content->is_array()) {
    const auto& blocks = content->get_array();
    std::string text;
    for (size_t i = 0; i < blocks.size(); ++i) {
      std::string bpath = index_path(cpath, i);
      const auto& block = object_at(blocks[i], bpath, "a content block object");
      std::string type = block_type(block, bpath);
      if (type == "text") {
        const auto* t = block.if_contains("text");
        if (!t) fail(bpath + ".text", "text block needs a 'text' string");
        if (!text.empty()) text += "\n\n";
        text += string_field(*t, bpath + ".text");
      } else if (type == "thinking") {
        if (r != Role::Assistant) fail(bpath + ".type", "only assistant messages carry thinking blocks");
        const auto* t = block.if_contains("thinking");
        if (!t) fail(bpath + ".thinking", "thinking block needs a 'thinking' string");
        m.reasoning = m.reasoning.value_or("") + string_field(*t, bpath + ".thinking");
      } else if (type == "redacted_thinking") {
        continue;  // opaque to us; we never send it
      } else if (type == "tool_use") {
        if (r != Role::Assistant) fail(bpath + ".type", "only assistant messages carry tool_use blocks");
        ToolCall call;
        const auto* id = block.if_contains("id");
        if (!id) fail(bpath + ".id", "tool_use block needs the 'id' the server returned");
        call.id = string_field(*id, bpath + ".id");
        const auto* name = block.if_contains("name");
        if (!name) fail(bpath + ".name", "tool_use block needs a 'name'");
        call.name = string_field(*name, bpath + ".name");
        const auto* input = block.if_contains("input");
        call.arguments = !input || input->is_null() ? "{}" : json_scan::compact_text(*input);
        m.tool_calls.push_back(std::move(call));
      } else if (type == "tool_result") {
        if (r != Role::User) fail(bpath + ".type", "only user messages carry tool_result blocks");
        Message t;
        t.role = Role::Tool;
        const auto* id = block.if_contains("tool_use_id");
        if (!id) fail(bpath + ".tool_use_id", "tool_result block needs a 'tool_use_id'");
        t.tool_call_id = string_field(*id, bpath + ".tool_use_id");
        if (const auto* c = block.if_contains("content")) t.content = tool_result_text(*c, bpath + ".content");
        tool_results.push_back(std::move(t));
      } else {
        fail(bpath + ".type", "content block type '" + type + "' is not supported: this model reads text only");
      }
    }
    m.content = std::move(text);
  } else {
    wrong_type(cpath, *content, "a string or an array of content blocks");
  }
  for (auto& t : tool_results) {
    out.chat.messages.push_back(std::move(t));
    out.message_paths.push_back(path);
  }
  // A user message holding only tool results adds no empty user turn.
  if (r == Role::User && !tool_results.empty() && m.content.empty()) return;
  out.chat.messages.push_back(std::move(m));
  out.message_paths.push_back(path);
}

json::object parse_tool(const json::value& v, const std::string& path, AnthropicRequest& out) {
  const auto& obj = object_at(v, path, "a tool object");
  json::object fn;
  const auto* name = obj.if_contains("name");
  if (!name) fail(path + ".name", "tool needs a 'name'");
  std::string n = string_field(*name, path + ".name");
  if (n.empty()) fail(path + ".name", "tool name must not be empty");
  fn["name"] = n;
  if (const auto* d = obj.if_contains("description"); d && !d->is_null())
    fn["description"] = string_field(*d, path + ".description");
  if (const auto* s = obj.if_contains("input_schema"); s && !s->is_null()) {
    if (!s->is_object()) wrong_type(path + ".input_schema", *s, "a JSON schema object");
    fn["parameters"] = *s;
  }
  (void)out;
  return fn;
}

void read_tool_choice(const json::value& v, ChatRequest& chat) {
  if (v.is_null()) return;
  const auto& obj = object_at(v, "tool_choice", "an object like {\"type\":\"auto\"}");
  const auto* t = obj.if_contains("type");
  if (!t) fail("tool_choice.type", "tool_choice needs a 'type' (auto, any, tool or none)");
  std::string type = string_field(*t, "tool_choice.type");
  if (type == "auto") chat.tool_choice = "auto";
  else if (type == "any") chat.tool_choice = "required";
  else if (type == "none") chat.tool_choice = "none";
  else if (type == "tool") {
    const auto* n = obj.if_contains("name");
    if (!n) fail("tool_choice.name", "tool_choice of type 'tool' needs the tool's 'name'");
    chat.tool_choice = "function:" + string_field(*n, "tool_choice.name");
  } else {
    fail("tool_choice.type", "tool_choice.type must be auto, any, tool or none, got '" + type + "'");
  }
}

Thinking read_thinking(const json::object& obj) {
  std::optional<bool> enabled;
  std::optional<Thinking> effort;
  if (const auto* t = obj.if_contains("thinking"); t && !t->is_null()) {
    if (t->is_bool()) {
      enabled = t->get_bool();
    } else {
      const auto& th = object_at(*t, "thinking", "an object like {\"type\":\"enabled\"}");
      if (const auto* type = th.if_contains("type"); type && !type->is_null()) {
        std::string s = string_field(*type, "thinking.type");
        if (s == "enabled" || s == "adaptive") enabled = true;
        else if (s == "disabled") enabled = false;
        else fail("thinking.type", "thinking.type must be enabled, adaptive or disabled, got '" + s + "'");
      }
      if (const auto* b = th.if_contains("budget_tokens"); b && !b->is_null())
        integer_field(*b, "thinking.budget_tokens", 0, std::numeric_limits<uint32_t>::max());
    }
  }
  auto read_effort = [&](const json::value& e, const std::string& path) {
    std::string s = string_field(e, path);
    if (s == "none") effort = Thinking::Off;
    else if (s == "max") effort = Thinking::Max;
    else if (s == "minimal" || s == "low" || s == "medium" || s == "high" || s == "xhigh") effort = Thinking::High;
    else fail(path, path + " must be low, medium, high or max, got '" + s + "'");
  };
  if (const auto* oc = obj.if_contains("output_config"); oc && !oc->is_null()) {
    const auto& o = object_at(*oc, "output_config", "an object");
    if (const auto* e = o.if_contains("effort"); e && !e->is_null()) read_effort(*e, "output_config.effort");
  }
  if (const auto* e = obj.if_contains("reasoning_effort"); e && !e->is_null()) read_effort(*e, "reasoning_effort");
  if ((enabled && !*enabled) || effort == Thinking::Off) return Thinking::Off;
  return effort == Thinking::Max ? Thinking::Max : Thinking::High;
}

}  // namespace

AnthropicRequest parse_anthropic_request(const json::value& body) {
  if (!body.is_object()) fail("", "request body must be a JSON object, got " + kind_of(body));
  const auto& obj = body.get_object();
  AnthropicRequest out;
  ChatRequest& chat = out.chat;
  if (const auto* v = obj.if_contains("model"); v && !v->is_null()) chat.model = string_field(*v, "model");

  if (const auto* s = obj.if_contains("system")) {
    std::string text = system_text(*s);
    if (!text.empty()) {
      Message m;
      m.role = Role::System;
      m.content = std::move(text);
      chat.messages.push_back(std::move(m));
      out.message_paths.push_back("system");
    }
  }
  const auto* messages = obj.if_contains("messages");
  if (!messages) fail("messages", "missing 'messages'");
  if (!messages->is_array()) wrong_type("messages", *messages, "an array");
  const auto& arr = messages->get_array();
  if (arr.empty()) fail("messages", "'messages' must contain at least one message");
  for (size_t i = 0; i < arr.size(); ++i) parse_message(arr[i], index_path("messages", i), out);

  if (const auto* tools = obj.if_contains("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) wrong_type("tools", *tools, "an array");
    const auto& t = tools->get_array();
    for (size_t i = 0; i < t.size(); ++i) {
      std::string path = index_path("tools", i);
      const auto& tool = object_at(t[i], path, "a tool object");
      if (const auto* type = tool.if_contains("type"); type && !type->is_null()) {
        std::string ty = string_field(*type, path + ".type");
        if (ty != "custom") {
          const auto* name = tool.if_contains("name");
          out.ignored_tools.push_back(name && name->is_string() ? std::string(name->get_string()) : ty);
          continue;
        }
      }
      chat.tools.push_back(parse_tool(t[i], path, out));
    }
  }
  if (const auto* c = obj.if_contains("tool_choice")) read_tool_choice(*c, chat);
  chat.thinking = read_thinking(obj);

  if (const auto* v = obj.if_contains("temperature"); v && !v->is_null())
    chat.sampling.temperature = ranged(*v, "temperature", 0, 2);
  if (const auto* v = obj.if_contains("top_p"); v && !v->is_null()) chat.sampling.top_p = ranged(*v, "top_p", 0, 1);
  if (const auto* v = obj.if_contains("top_k"); v && !v->is_null())
    chat.sampling.top_k = static_cast<uint32_t>(integer_field(*v, "top_k", 0, std::numeric_limits<uint32_t>::max()));
  if (const auto* v = obj.if_contains("max_tokens"); v && !v->is_null())
    chat.max_tokens = static_cast<uint32_t>(integer_field(*v, "max_tokens", 0, std::numeric_limits<uint32_t>::max()));
  if (const auto* v = obj.if_contains("stop_sequences"); v && !v->is_null()) {
    if (!v->is_array()) wrong_type("stop_sequences", *v, "an array of strings");
    const auto& s = v->get_array();
    for (size_t i = 0; i < s.size(); ++i) {
      std::string stop = string_field(s[i], index_path("stop_sequences", i));
      if (!stop.empty()) chat.stop.push_back(std::move(stop));
    }
  }
  if (const auto* v = obj.if_contains("stream"); v && !v->is_null()) chat.stream = bool_field(*v, "stream");
  return out;
}

}  // namespace ds4::protocol
