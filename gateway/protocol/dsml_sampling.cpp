// DSML-safe sampling state. See dsml_sampling.hpp.
#include "gateway/protocol/dsml_sampling.hpp"

#include <algorithm>
#include <optional>

#include "gateway/protocol/dsml_format.hpp"
#include "gateway/protocol/json_constraint.hpp"

namespace ds4::protocol {

namespace {

constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kBlockOpen = "<｜DSML｜tool_calls>";
constexpr std::string_view kBlockClose = "</｜DSML｜tool_calls>";
constexpr std::string_view kParamOpen = "<｜DSML｜parameter ";
constexpr std::string_view kParamClose = "</｜DSML｜parameter>";
constexpr std::string_view kInvokeName = "<｜DSML｜invoke name=\"";
constexpr std::string_view kParamName = "<｜DSML｜parameter name=\"";
constexpr std::string_view kInvokeClose = "</｜DSML｜invoke>";

enum class Phase {
  Reasoning,  // before </think>
  Content,    // free text; a block may open
  Block,      // inside the tool-call block, outside parameter values
  StringValue,
  JsonValue,
  Done,  // after the block closed
};

// An attribute value being written inside the block (what allowed() constrains).
enum class Reading { None, ToolName, ParamName, Spelling };

constexpr std::string_view kStringTrue = " string=\"true\">";
constexpr std::string_view kStringFalse = " string=\"false\">";

}  // namespace

const char* sampling_zone_name(SamplingZone zone) {
  switch (zone) {
    case SamplingZone::Free: return "free";
    case SamplingZone::Structural: return "structural";
    case SamplingZone::Payload: return "payload";
  }
  return "free";
}

struct DsmlSamplingState::State {
  Phase phase = Phase::Content;
  ForcedCall forced;
  std::shared_ptr<const std::vector<DeclaredTool>> tools;  // shared: admits() copies the state
  std::string forced_text;                                 // the full text to force once content starts
  size_t forced_done = 0;                                  // bytes of forced_text already generated
  bool forcing = false;                                    // content started and the forced text is not complete yet
  std::string tail;                                        // recent bytes, for marker detection across feeds
  std::string tag;                                         // the parameter open tag being read (in Block)
  bool in_tag = false;
  // JSON value scanning
  bool json_in_string = false;
  bool json_escape = false;
  // Declared names
  Reading reading = Reading::None;
  std::string typed;                        // the attribute value so far
  std::string tool;                         // the current invoke's name
  std::vector<std::string> given;           // its parameters so far
  std::vector<std::string_view> spellings;  // for the parameter just named
  std::string preferred;                    // the one name left by prefer(); empty: all
  // Declared schemas (json_constraint.hpp): the JSON of a string="false" value, the structure
  // that must follow a name or a value (`expect`: the texts one of which must come next, so an
  // invoke cannot close before its required parameters), and whether a byte broke either.
  std::optional<JsonConstraint> json;
  bool json_closing = false;  // the value is complete and its closing tag has begun
  std::vector<std::string> expect;
  std::string expect_typed;
  bool broken = false;

  bool ends_with(std::string_view s) const { return tail.size() >= s.size() && tail.ends_with(s); }

  void enter_content() {
    phase = Phase::Content;
    forcing = forced.required;
    forced_done = 0;
  }

  void step(char c) {
    if (!expect.empty()) advance_expect(c);
    if (forcing) {
      if (forced_done < forced_text.size() && forced_text[forced_done] == c) ++forced_done;
      else forcing = false;  // something else got through (no token fitted): stop forcing
      if (forced_done == forced_text.size()) forcing = false;
    }
    tail.push_back(c);
    if (tail.size() > 64) tail.erase(0, tail.size() - 64);
    switch (phase) {
      case Phase::Reasoning:
        if (ends_with(kThinkClose)) enter_content();
        return;
      case Phase::Content:
        if (ends_with(kBlockOpen)) {
          phase = Phase::Block;
          in_tag = false;
        }
        return;
      case Phase::Block:
        read_name(c);
        if (ends_with(kBlockClose)) {
          phase = Phase::Done;
          forcing = false;
          return;
        }
        if (!in_tag && ends_with(kParamOpen)) {
          in_tag = true;
          tag.clear();
          return;
        }
        if (ends_with(kInvokeName)) start_reading(Reading::ToolName);
        if (in_tag) {
          if (ends_with(kParamName)) start_reading(Reading::ParamName);
          if (c == '>') {
            in_tag = false;
            bool is_string = tag.find("string=\"false\"") == std::string::npos;
            phase = is_string ? Phase::StringValue : Phase::JsonValue;
            json_in_string = json_escape = false;
            enter_value(is_string);
          } else {
            tag.push_back(c);
          }
        }
        return;
      case Phase::StringValue:
        if (ends_with(kParamClose)) {
          phase = Phase::Block;
          after_parameter();
        } else if (expect.empty() && ends_with(kParamClose.substr(0, kParamClose.size() - 10))) {
          // "</｜DSML｜" in a value can only close it: a model that goes on to close the invoke
          // or the block from inside a value has forgotten the value's own closing tag.
          set_expect({std::string(kParamClose.substr(kParamClose.size() - 10))});
        }
        return;
      case Phase::JsonValue:
        if (json) {
          step_json(c);
          return;
        }
        if (json_in_string) {
          if (json_escape) json_escape = false;
          else if (c == '\\') json_escape = true;
          else if (c == '"') json_in_string = false;
          return;
        }
        if (c == '"') json_in_string = true;
        else if (ends_with(kParamClose)) phase = Phase::Block;
        return;
      case Phase::Done: return;
    }
  }

  const DeclaredParameter* find_parameter(std::string_view param) const {
    if (const DeclaredTool* t = find_tool(tool))
      for (const DeclaredParameter& p : t->parameters)
        if (p.name == param) return &p;
    return nullptr;
  }

  void advance_expect(char c) {
    expect_typed.push_back(c);
    std::erase_if(expect, [&](const std::string& e) { return !e.starts_with(expect_typed); });
    if (expect.empty()) broken = true;
    else if (std::find(expect.begin(), expect.end(), expect_typed) != expect.end()) expect.clear();
  }

  void set_expect(std::vector<std::string> texts) {
    expect = std::move(texts);
    expect_typed.clear();
  }

  // What may follow `prefix` inside the current invoke: another parameter while one is left,
  // the invoke's close once its required parameters are given. Only for a declared tool with
  // declared parameters (names are free otherwise).
  void expect_after(std::string_view prefix) {
    const DeclaredTool* t = find_tool(tool);
    if (!t || t->parameters.empty()) return;
    bool left = false, missing = false;
    for (const DeclaredParameter& p : t->parameters)
      left = left || std::find(given.begin(), given.end(), p.name) == given.end();
    for (const std::string& r : t->required)
      missing = missing || std::find(given.begin(), given.end(), r) == given.end();
    std::vector<std::string> texts;
    if (left) texts.push_back(std::string(prefix) + std::string(kParamName));
    if (!missing) texts.push_back(std::string(prefix) + std::string(kInvokeClose));
    if (!texts.empty()) set_expect(std::move(texts));
  }

  void after_parameter() { expect_after("\n"); }

  // A value begins: a string="false" value is JSON for the parameter's schema (any JSON without
  // one); a string="true" value of a string enum is one of its values.
  void enter_value(bool is_string) {
    json_closing = false;
    json.reset();
    const DeclaredParameter* p = given.empty() ? nullptr : find_parameter(given.back());
    if (!is_string) {
      json.emplace(p ? p->schema : nullptr);
      return;
    }
    const boost::json::object* schema = p && p->schema ? p->schema->if_object() : nullptr;
    const boost::json::value* values = schema ? schema->if_contains("enum") : nullptr;
    if (!values || !values->is_array() || values->get_array().empty()) return;
    std::vector<std::string> texts;
    for (const boost::json::value& v : values->get_array()) {
      if (!v.is_string()) return;  // a mixed enum: left to the model
      texts.push_back(dsml::escape_string_value(v.get_string()) + std::string(kParamClose));
    }
    set_expect(std::move(texts));
  }

  void step_json(char c) {
    if (json_closing) {
      if (ends_with(kParamClose)) {
        phase = Phase::Block;
        json.reset();
        json_closing = false;
        after_parameter();
      }
      return;
    }
    if (json->step(c)) {
      json_in_string = json->in_string();
      // The parser ends the value at a raw closing tag even inside a JSON string (the renderer
      // writes its "<" as \u003c there), so the tag may not be completed inside one.
      if (json_in_string && ends_with(kParamClose)) {
        broken = true;
        json.reset();
      }
      return;
    }
    if (c == '<' && json->complete()) {
      json_closing = true;
      json_in_string = false;
      set_expect({std::string(kParamClose.substr(1))});
      return;
    }
    broken = true;
    json.reset();  // out of step with the text now: the value is left to the parser
  }

  void start_reading(Reading what) {
    reading = what;
    typed.clear();
    preferred.clear();
    if (what == Reading::ToolName) {
      tool.clear();
      given.clear();
    }
  }

  // Before the marker checks: the quote that ends a name being read was not part of it.
  void read_name(char c) {
    switch (reading) {
      case Reading::None: return;
      case Reading::Spelling:
        typed.push_back(c);
        if (c == '>') reading = Reading::None;
        return;
      case Reading::ToolName:
      case Reading::ParamName: break;
    }
    if (c != '"') {
      typed.push_back(c);
      return;
    }
    const bool was_tool = reading == Reading::ToolName;
    reading = Reading::None;
    if (was_tool) {
      tool = typed;
      expect_after(">\n");
      return;
    }
    given.push_back(typed);
    spellings = spellings_of(typed);
    typed.clear();
    if (!spellings.empty()) reading = Reading::Spelling;
  }

  // The value spellings the named parameter may take; empty (free) without declared tools.
  std::vector<std::string_view> spellings_of(std::string_view param) const {
    if (tools->empty()) return {};
    ValueSpelling sp = ValueSpelling::Either;
    if (const DeclaredTool* t = find_tool(tool))
      for (const DeclaredParameter& p : t->parameters)
        if (p.name == param) sp = p.spelling;
    if (sp == ValueSpelling::String) return {kStringTrue};
    if (sp == ValueSpelling::Json) return {kStringFalse};
    return {kStringTrue, kStringFalse};
  }

  const DeclaredTool* find_tool(std::string_view name) const {
    for (const DeclaredTool& t : *tools)
      if (t.name == name) return &t;
    return nullptr;
  }

  // What may complete `typed`: a declared name's remaining bytes and its closing quote, or the
  // rest of a value spelling.
  std::vector<std::string> name_continuations() const {
    std::vector<std::string> out;
    auto offer = [&](const std::string& name) {
      if (!preferred.empty() && name != preferred) return;
      if (name.starts_with(typed)) out.push_back(name.substr(typed.size()) + "\"");
    };
    if (reading == Reading::ToolName) {
      for (const DeclaredTool& t : *tools) offer(t.name);
    } else if (reading == Reading::ParamName) {
      if (const DeclaredTool* t = find_tool(tool))
        for (const DeclaredParameter& p : t->parameters)
          if (std::find(given.begin(), given.end(), p.name) == given.end()) offer(p.name);
    } else {
      for (std::string_view sp : spellings)
        if (sp.starts_with(typed)) out.emplace_back(sp.substr(typed.size()));
    }
    return out;
  }

  std::vector<std::string> allowed() const {
    if (forcing) {
      const std::string rest = forced_text.substr(forced_done);
      if (!forced.function.empty() || tools->empty()) return {rest};  // named, or any name
      std::vector<std::string> out;
      for (const DeclaredTool& t : *tools) out.push_back(rest + t.name + "\"");
      return out;
    }
    if (!expect.empty()) {
      std::vector<std::string> out;
      for (const std::string& e : expect) out.push_back(e.substr(expect_typed.size()));
      return out;
    }
    if (phase != Phase::Block || reading == Reading::None) return {};
    return name_continuations();
  }

  // A possible closing tag has begun at the end of a value: "</" or longer prefix of it.
  bool closing_tag_started() const {
    for (size_t n = kParamClose.size() - 1; n >= 2; --n)
      if (ends_with(kParamClose.substr(0, n))) return true;
    return false;
  }
};

namespace {

// How a schema's value is written in DSML: string="true" only for a plain string type.
ValueSpelling spelling_of(const boost::json::value& schema) {
  const boost::json::object* o = schema.if_object();
  const boost::json::value* type = o ? o->if_contains("type") : nullptr;
  if (!type || !type->is_string()) return ValueSpelling::Either;
  return type->get_string() == "string" ? ValueSpelling::String : ValueSpelling::Json;
}

}  // namespace

std::vector<DeclaredTool> declared_tools(const std::vector<boost::json::object>& tools) {
  std::vector<DeclaredTool> out;
  for (const boost::json::object& fn : tools) {
    const boost::json::value* name = fn.if_contains("name");
    if (!name || !name->is_string()) continue;
    DeclaredTool t{dsml::escape_attribute(name->get_string()), {}, {}};
    if (const boost::json::value* params = fn.if_contains("parameters"); params && params->is_object())
      if (const boost::json::value* props = params->get_object().if_contains("properties"); props && props->is_object())
        for (const auto& kv : props->get_object())
          t.parameters.push_back({dsml::escape_attribute(kv.key()), spelling_of(kv.value()),
                                  std::make_shared<const boost::json::value>(kv.value())});
    if (const boost::json::value* params = fn.if_contains("parameters"); params && params->is_object())
      if (const boost::json::value* req = params->get_object().if_contains("required"); req && req->is_array())
        for (const boost::json::value& r : req->get_array())
          if (r.is_string())
            for (const DeclaredParameter& p : t.parameters)
              if (p.name == dsml::escape_attribute(r.get_string())) t.required.push_back(p.name);
    out.push_back(std::move(t));
  }
  return out;
}

DsmlSamplingState::DsmlSamplingState(bool thinking_started, ForcedCall forced, std::vector<DeclaredTool> tools)
    : s_(std::make_unique<State>()) {
  s_->forced = std::move(forced);
  s_->tools = std::make_shared<const std::vector<DeclaredTool>>(std::move(tools));
  if (s_->forced.required || !s_->forced.function.empty()) {
    s_->forced.required = true;
    s_->forced_text = "\n\n";
    s_->forced_text += kBlockOpen;
    s_->forced_text += "\n<｜DSML｜invoke name=\"";
    if (!s_->forced.function.empty()) s_->forced_text += dsml::escape_attribute(s_->forced.function) + "\">\n";
  }
  if (thinking_started) s_->phase = Phase::Reasoning;
  else s_->enter_content();
}

DsmlSamplingState::~DsmlSamplingState() = default;
DsmlSamplingState::DsmlSamplingState(DsmlSamplingState&&) noexcept = default;
DsmlSamplingState& DsmlSamplingState::operator=(DsmlSamplingState&&) noexcept = default;

void DsmlSamplingState::feed(std::string_view text) {
  for (char c : text) s_->step(c);
}

SamplingZone DsmlSamplingState::zone() const {
  switch (s_->phase) {
    case Phase::Reasoning:
    case Phase::Content:
    case Phase::Done: return SamplingZone::Free;
    case Phase::Block: return SamplingZone::Structural;
    case Phase::StringValue: return s_->closing_tag_started() ? SamplingZone::Structural : SamplingZone::Payload;
    case Phase::JsonValue:
      if (s_->json_in_string) return SamplingZone::Payload;
      return SamplingZone::Structural;
  }
  return SamplingZone::Free;
}

std::vector<std::string> DsmlSamplingState::allowed() const { return s_->allowed(); }

bool DsmlSamplingState::admits(std::string_view bytes) const {
  State probe = *s_;
  probe.broken = false;
  for (char c : bytes) {
    const std::vector<std::string> alts = probe.allowed();
    if (!alts.empty() && std::none_of(alts.begin(), alts.end(), [c](const std::string& a) { return a[0] == c; }))
      return false;
    probe.step(c);
    if (probe.broken) return false;
  }
  return true;
}

std::vector<std::string> DsmlSamplingState::name_choice() const {
  const State& st = *s_;
  if (st.forcing || st.phase != Phase::Block || !st.typed.empty() || !st.preferred.empty()) return {};
  if (st.reading != Reading::ToolName && st.reading != Reading::ParamName) return {};
  std::vector<std::string> names = st.name_continuations();
  if (names.size() < 2) return {};
  return names;
}

std::vector<std::string> DsmlSamplingState::name_choice_texts() const {
  std::vector<std::string> texts = name_choice();
  const State& st = *s_;
  if (texts.empty() || st.reading != Reading::ToolName) return texts;
  for (std::string& t : texts) {
    // t is the rest of a declared name and its closing quote; nothing of it is typed yet
    const DeclaredTool* tool = st.find_tool(t.substr(0, t.size() - 1));
    if (tool && !tool->parameters.empty()) t += ">\n" + std::string(kParamName) + tool->parameters.front().name + "\"";
  }
  return texts;
}

void DsmlSamplingState::prefer(size_t candidate) {
  std::vector<std::string> names = name_choice();
  if (candidate >= names.size()) return;
  names[candidate].pop_back();  // the closing quote
  s_->preferred = names[candidate];
}

bool DsmlSamplingState::value_constrained() const {
  return s_->phase == Phase::JsonValue && s_->json && !s_->json_closing;
}

bool DsmlSamplingState::inside_block() const {
  return s_->phase == Phase::Block || s_->phase == Phase::StringValue || s_->phase == Phase::JsonValue;
}

}  // namespace ds4::protocol
