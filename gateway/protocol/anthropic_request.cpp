// Anthropic Messages request parsing. See anthropic_request.hpp for the mapping.
#include "gateway/protocol/anthropic_request.hpp"

#include <map>
#include <set>

#include "gateway/protocol/json_fields.hpp"
#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol {

namespace json = boost::json;
using namespace json_fields;

namespace {

std::string block_type(const json::object& block, const std::string& path) {
  return required_string(block, "type", path, "content block needs a 'type'");
}

json::object parse_tool(const json::value& v, const std::string& path) {
  const auto& obj = object_at(v, path, "a tool object");
  json::object fn;
  std::string n = required_string(obj, "name", path, "tool needs a 'name'");
  if (n.empty()) fail(path + ".name", "tool name must not be empty");
  fn["name"] = n;
  if (present(obj, "description")) fn["description"] = optional_string(obj, "description", path);
  if (const auto* s = present(obj, "input_schema"))
    fn["parameters"] = object_at(*s, path + ".input_schema", "a JSON schema object");
  return fn;
}

// The request's client tools: the ones rendered in the tools block and the deferred ones
// (`defer_loading: true`), which stay out of the prompt until a tool_result's tool_reference
// block names them (Claude Code's ToolSearch answers with such references).
class ClientTools {
 public:
  void add(json::object fn, bool deferred, ChatRequest& chat) {
    std::string name(fn.at("name").get_string());
    if (deferred) deferred_.insert(name);
    else chat.tools.push_back(fn);
    all_.emplace(std::move(name), std::move(fn));
  }

  // The schema a tool_reference names, compact as in the tools block; a deferred tool is added
  // to chat.loaded_tools the first time. Throws RequestError at `path` for an unknown name.
  std::string reference(const std::string& name, const std::string& path, ChatRequest& chat) {
    auto it = all_.find(name);
    if (it == all_.end())
      fail(path, "tool_reference names the tool '" + name + "', which is not among the request's tools");
    if (deferred_.count(name) && loaded_.insert(name).second) chat.loaded_tools.push_back(it->second);
    return json_scan::compact_text(it->second);
  }

 private:
  std::map<std::string, json::object> all_;
  std::set<std::string> deferred_;  // names; their schemas are in all_
  std::set<std::string> loaded_;
};

// A tool_result's content: a string, or text and tool_reference blocks. Text blocks are joined
// with "\n\n"; a run of tool_reference blocks becomes one <functions> block holding a
// <function>SCHEMA</function> line per tool, the encoding ToolSearch's description promises.
std::string tool_result_text(const json::value& v, const std::string& path, ClientTools& tools, ChatRequest& chat) {
  if (v.is_null()) return {};
  if (v.is_string()) return std::string(v.get_string());
  if (!v.is_array()) wrong_type(path, v, "a string or an array of text or tool_reference blocks");
  std::string out;
  bool in_functions = false;
  auto close_functions = [&] {
    if (in_functions) out += "</functions>";
    in_functions = false;
  };
  const auto& arr = v.get_array();
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string bpath = index_path(path, i);
    const auto& block = object_at(arr[i], bpath, "a content block object");
    std::string type = block_type(block, bpath);
    if (type == "tool_reference") {
      std::string name = required_string(block, "tool_name", bpath, "tool_reference block needs a 'tool_name'");
      std::string schema = tools.reference(name, bpath + ".tool_name", chat);
      if (!in_functions) {
        if (!out.empty()) out += "\n\n";
        out += "<functions>\n";
        in_functions = true;
      }
      out += "<function>" + schema + "</function>\n";
      continue;
    }
    if (type != "text")
      fail(bpath + ".type", "tool_result block type '" + type +
                                "' is not supported: this model reads text (and tool_reference blocks) only");
    close_functions();
    std::string text = required_string(block, "text", bpath, "text block needs a 'text' string");
    if (!out.empty()) out += "\n\n";
    out += text;
  }
  close_functions();
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
    std::string t = required_string(block, "text", bpath, "text block needs a 'text' string");
    if (t.rfind("x-anthropic-", 0) == 0) continue;  // client billing header, not instructions
    if (!out.empty()) out += "\n";
    out += t;
  }
  return out;
}

// One wire message -> one or more ChatRequest messages (tool results first, then the text).
void parse_message(const json::value& v, const std::string& path, ClientTools& tools, AnthropicRequest& out) {
  const auto& obj = object_at(v, path, "a message object");
  std::string role = required_string(obj, "role", path, "message needs a 'role'");
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
        std::string t = required_string(block, "text", bpath, "text block needs a 'text' string");
        if (!text.empty()) text += "\n\n";
        text += t;
      } else if (type == "thinking") {
        if (r != Role::Assistant) fail(bpath + ".type", "only assistant messages carry thinking blocks");
        m.reasoning = m.reasoning.value_or("") +
                      required_string(block, "thinking", bpath, "thinking block needs a 'thinking' string");
      } else if (type == "redacted_thinking") {
        continue;  // opaque to us; we never send it
      } else if (type == "tool_use") {
        if (r != Role::Assistant) fail(bpath + ".type", "only assistant messages carry tool_use blocks");
        ToolCall call;
        call.id = required_string(block, "id", bpath, "tool_use block needs the 'id' the server returned");
        call.name = required_string(block, "name", bpath, "tool_use block needs a 'name'");
        const auto* input = present(block, "input");
        call.arguments = input ? json_scan::compact_text(*input) : "{}";
        m.tool_calls.push_back(std::move(call));
      } else if (type == "tool_result") {
        if (r != Role::User) fail(bpath + ".type", "only user messages carry tool_result blocks");
        Message t;
        t.role = Role::Tool;
        t.tool_call_id = required_string(block, "tool_use_id", bpath, "tool_result block needs a 'tool_use_id'");
        if (const auto* c = block.if_contains("content"))
          t.content = tool_result_text(*c, bpath + ".content", tools, out.chat);
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

void read_tool_choice(const json::value& v, ChatRequest& chat) {
  if (v.is_null()) return;
  const auto& obj = object_at(v, "tool_choice", "an object like {\"type\":\"auto\"}");
  std::string type =
      required_string(obj, "type", "tool_choice", "tool_choice needs a 'type' (auto, any, tool or none)");
  if (type == "auto") chat.tool_choice = "auto";
  else if (type == "any") chat.tool_choice = "required";
  else if (type == "none") chat.tool_choice = "none";
  else if (type == "tool") {
    chat.tool_choice =
        "function:" + required_string(obj, "name", "tool_choice", "tool_choice of type 'tool' needs the tool's 'name'");
  } else {
    fail("tool_choice.type", "tool_choice.type must be auto, any, tool or none, got '" + type + "'");
  }
}

Thinking read_thinking(const json::object& obj) {
  std::optional<bool> enabled;
  std::optional<Thinking> effort;
  if (const auto* t = present(obj, "thinking")) {
    if (t->is_bool()) {
      enabled = t->get_bool();
    } else {
      const auto& th = object_at(*t, "thinking", "an object like {\"type\":\"enabled\"}");
      if (present(th, "type")) {
        std::string s = optional_string(th, "type", "thinking");
        if (s == "enabled" || s == "adaptive") enabled = true;
        else if (s == "disabled") enabled = false;
        else fail("thinking.type", "thinking.type must be enabled, adaptive or disabled, got '" + s + "'");
      }
      optional_u32(th, "budget_tokens", "thinking");  // checked; the model's thinking has no budget knob
    }
  }
  auto read_effort = [&](const json::value& e, const std::string& path) {
    std::string s = string_field(e, path);
    if (s == "none") effort = Thinking::Off;
    else if (s == "max") effort = Thinking::Max;
    else if (s == "minimal" || s == "low" || s == "medium" || s == "high" || s == "xhigh") effort = Thinking::High;
    else fail(path, path + " must be low, medium, high or max, got '" + s + "'");
  };
  if (const auto* oc = present(obj, "output_config")) {
    const auto& o = object_at(*oc, "output_config", "an object");
    if (const auto* e = present(o, "effort")) read_effort(*e, "output_config.effort");
  }
  if (const auto* e = present(obj, "reasoning_effort")) read_effort(*e, "reasoning_effort");
  if ((enabled && !*enabled) || effort == Thinking::Off) return Thinking::Off;
  return effort == Thinking::Max ? Thinking::Max : Thinking::High;
}

}  // namespace

AnthropicRequest parse_anthropic_request(const json::value& body) {
  if (!body.is_object()) fail("", "request body must be a JSON object, got " + kind_of(body));
  const auto& obj = body.get_object();
  AnthropicRequest out;
  ChatRequest& chat = out.chat;
  chat.model = optional_string(obj, "model", "");

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
  // Tools before messages: a tool_result's tool_reference blocks name them.
  ClientTools client_tools;
  if (const auto* tools = present(obj, "tools")) {
    if (!tools->is_array()) wrong_type("tools", *tools, "an array");
    const auto& t = tools->get_array();
    for (size_t i = 0; i < t.size(); ++i) {
      std::string path = index_path("tools", i);
      const auto& tool = object_at(t[i], path, "a tool object");
      if (present(tool, "type")) {
        std::string ty = optional_string(tool, "type", path);
        if (ty != "custom") {
          const auto* name = tool.if_contains("name");
          out.ignored_tools.push_back(name && name->is_string() ? std::string(name->get_string()) : ty);
          continue;
        }
      }
      bool deferred = false;
      if (const auto* d = present(tool, "defer_loading")) deferred = bool_field(*d, path + ".defer_loading");
      client_tools.add(parse_tool(t[i], path), deferred, chat);
    }
  }
  const auto* messages = obj.if_contains("messages");
  if (!messages) fail("messages", "missing 'messages'");
  if (!messages->is_array()) wrong_type("messages", *messages, "an array");
  const auto& arr = messages->get_array();
  if (arr.empty()) fail("messages", "'messages' must contain at least one message");
  for (size_t i = 0; i < arr.size(); ++i) parse_message(arr[i], index_path("messages", i), client_tools, out);

  if (const auto* c = obj.if_contains("tool_choice")) read_tool_choice(*c, chat);
  chat.thinking = read_thinking(obj);

  if (const auto* v = present(obj, "temperature")) chat.sampling.temperature = ranged(*v, "temperature", 0, 2);
  if (const auto* v = present(obj, "top_p")) chat.sampling.top_p = ranged(*v, "top_p", 0, 1);
  if (const auto* v = present(obj, "speculation")) chat.sampling.speculation = bool_field(*v, "speculation");
  if (auto k = optional_u32(obj, "top_k", "")) chat.sampling.top_k = *k;
  if (auto n = optional_u32(obj, "max_tokens", "")) chat.max_tokens = n;
  if (const auto* v = present(obj, "stop_sequences")) {
    if (!v->is_array()) wrong_type("stop_sequences", *v, "an array of strings");
    const auto& s = v->get_array();
    for (size_t i = 0; i < s.size(); ++i) {
      std::string stop = string_field(s[i], index_path("stop_sequences", i));
      if (!stop.empty()) chat.stop.push_back(std::move(stop));
    }
  }
  if (const auto* v = present(obj, "stream")) chat.stream = bool_field(*v, "stream");
  // metadata.user_id names the caller: the session hint (warm sessions, the gateway's route key,
  // docs/scale-out.md §routing) unless the X-Claude-Code-Session-Id header gives one.
  if (const auto* m = present(obj, "metadata"); m && m->is_object())
    if (const auto* id = m->get_object().if_contains("user_id"); id && id->is_string())
      chat.session_hint = std::string(id->get_string());
  return out;
}

}  // namespace ds4::protocol
