// Tool-call arguments under the declared schemas (docs/json-constraint.md §features), with the
// tool lists Claude Code, Codex and opencode really send (tests/clients/recordings).
//
// A random "weak model" (byte vocabulary, sampled at temperature 1) means to call each recorded
// tool with arguments that are often wrong: a wrong type for a value, a required property left
// out, a property the schema does not have. Its intent gets a high logit and every other byte a
// random one; it reads its own output to find its place in the intent again (realign()). Generated through the serving
// decode step with the DSML token policy, every call that comes out must parse and its arguments must validate against
// the tool's schema by the small validator below, written apart from the constraint it checks.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <random>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/dsml_format.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/dsml_sampling.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/token_choice.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;

// The independent validator: type, properties, required, additionalProperties, items,
// enum/const, min/maxItems, min/maxLength; anyOf/oneOf: some alternative matches.
bool valid(const json::value& v, const json::value& schema, std::string& why, const std::string& at = "$") {
  if (!schema.is_object()) return true;
  const json::object& s = schema.get_object();
  auto fail = [&](const std::string& what) {
    why = at + ": " + what;
    return false;
  };
  for (const char* key : {"anyOf", "oneOf"})
    if (const json::value* alts = s.if_contains(key); alts && alts->is_array()) {
      bool any = false;
      for (const json::value& a : alts->get_array()) {
        std::string ignored;
        any = any || valid(v, a, ignored, at);
      }
      if (!any) return fail(std::string("no ") + key + " alternative matches");
    }
  if (const json::value* e = s.if_contains("enum"); e && e->is_array()) {
    const json::array& values = e->get_array();
    if (std::find(values.begin(), values.end(), v) == values.end()) return fail("not in enum");
  }
  if (const json::value* c = s.if_contains("const"); c && *c != v) return fail("not the const");
  if (const json::value* t = s.if_contains("type")) {
    auto is = [&](std::string_view type) {
      if (type == "object") return v.is_object();
      if (type == "array") return v.is_array();
      if (type == "string") return v.is_string();
      if (type == "boolean") return v.is_bool();
      if (type == "null") return v.is_null();
      if (type == "integer") return v.is_int64() || v.is_uint64();
      if (type == "number") return v.is_number();
      return true;
    };
    bool ok = false;
    if (t->is_string()) ok = is(t->get_string());
    else if (t->is_array())
      for (const json::value& x : t->get_array()) ok = ok || (x.is_string() && is(x.get_string()));
    else ok = true;
    if (!ok) return fail("wrong type " + json::serialize(v));
  }
  if (v.is_object()) {
    const json::object& o = v.get_object();
    const json::object* props = s.if_contains("properties") ? s.at("properties").if_object() : nullptr;
    if (const json::value* req = s.if_contains("required"); req && req->is_array())
      for (const json::value& r : req->get_array())
        if (r.is_string() && !o.contains(r.get_string())) return fail("missing required " + json::serialize(r));
    const json::value* extra = s.if_contains("additionalProperties");
    for (const auto& kv : o) {
      const json::value* p = props ? props->if_contains(kv.key()) : nullptr;
      if (!p && extra && extra->is_bool() && !extra->get_bool())
        return fail("unknown property " + std::string(kv.key()));
      const json::value* sub = p ? p : (extra && extra->is_object() ? extra : nullptr);
      if (sub && !valid(kv.value(), *sub, why, at + "." + std::string(kv.key()))) return false;
    }
  }
  if (v.is_array()) {
    const json::array& a = v.get_array();
    if (const json::value* m = s.if_contains("minItems"); m && m->is_int64() && a.size() < size_t(m->get_int64()))
      return fail("too few items");
    if (const json::value* m = s.if_contains("maxItems"); m && m->is_int64() && a.size() > size_t(m->get_int64()))
      return fail("too many items");
    if (const json::value* items = s.if_contains("items"))
      for (size_t i = 0; i < a.size(); ++i)
        if (!valid(a[i], *items, why, at + "[" + std::to_string(i) + "]")) return false;
  }
  if (v.is_string()) {
    // code points
    size_t n = 0;
    for (char c : v.get_string()) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (const json::value* m = s.if_contains("maxLength"); m && m->is_int64() && n > size_t(m->get_int64()))
      return fail("too long");
    if (const json::value* m = s.if_contains("minLength"); m && m->is_int64() && n < size_t(m->get_int64()))
      return fail("too short");
  }
  return true;
}

// Tools as the chat layer holds them (inner {name, parameters}), from one recording's first
// request that has tools: Anthropic (input_schema), Responses (flat, and inside namespaces),
// chat ({"type":"function","function":{...}}).
std::vector<json::object> recorded_tools(const std::string& file) {
  std::ifstream in(std::string(DS4D_CLIENT_RECORDINGS) + "/" + file);
  std::string line;
  std::vector<json::object> out;
  std::function<void(const json::array&)> take = [&](const json::array& tools) {
    for (const json::value& t : tools) {
      const json::object& o = t.as_object();
      if (const json::value* inner = o.if_contains("tools"); inner && inner->is_array()) take(inner->get_array());
      const json::object* fn = o.if_contains("function") ? o.at("function").if_object() : &o;
      const json::value* name = fn->if_contains("name");
      const json::value* schema = fn->if_contains("parameters");
      if (!schema) schema = fn->if_contains("input_schema");
      if (!name || !schema || !schema->is_object()) continue;
      out.push_back({{"name", *name}, {"parameters", *schema}});
    }
  };
  while (out.empty() && std::getline(in, line)) {
    const json::value rec = json::parse(line);
    if (const json::value* tools = rec.at("body").as_object().if_contains("tools"); tools && tools->is_array())
      take(tools->get_array());
  }
  return out;
}

// A value a weak model might write for `schema`: right with probability `right`, else of
// another type; objects sometimes miss a required property or add one the schema lacks.
json::value intent_value(const json::value* schema, std::mt19937_64& rng, double right, int depth = 0) {
  std::uniform_real_distribution<double> u(0, 1);
  const json::object* s = schema ? schema->if_object() : nullptr;
  if (u(rng) > right || !s || depth > 3) {
    switch (rng() % 5) {
      case 0: return json::value(static_cast<int64_t>(rng() % 1000));
      case 1: return json::value("some text");
      case 2: return json::value(true);
      case 3: return json::array{1.5, "x"};
      default: return json::object{{"k", "v"}};
    }
  }
  if (const json::value* e = s->if_contains("enum"); e && e->is_array() && !e->get_array().empty())
    return e->get_array()[rng() % e->get_array().size()];
  std::string type = "string";
  if (const json::value* t = s->if_contains("type"); t && t->is_string()) type = t->get_string();
  else if (s->contains("properties")) type = "object";
  if (type == "integer") return json::value(static_cast<int64_t>(rng() % 100));
  if (type == "number") return json::value(static_cast<double>(rng() % 1000) / 8);
  if (type == "boolean") return json::value(rng() % 2 == 0);
  if (type == "array") {
    json::array a;
    const json::value* items = s->if_contains("items");
    for (size_t i = 0, n = rng() % 3; i < n; ++i) a.push_back(intent_value(items, rng, right, depth + 1));
    return a;
  }
  if (type == "object") {
    json::object o;
    if (const json::value* props = s->if_contains("properties"); props && props->is_object())
      for (const auto& kv : props->get_object())
        if (u(rng) < 0.6) o[kv.key()] = intent_value(&kv.value(), rng, right, depth + 1);
    if (u(rng) < 0.15) o["unexpected"] = "x";
    return o;
  }
  return json::value("text " + std::to_string(rng() % 100));
}

// The whole reply the weak model means to write: a call of `tool` in DSML.
std::string intent(const json::object& tool, std::mt19937_64& rng) {
  json::value args = intent_value(&tool.at("parameters"), rng, 0.7);
  if (!args.is_object()) args = json::object{};
  protocol::ToolCall call{"call_1", std::string(tool.at("name").as_string()), json::serialize(args)};
  std::string out = "Calling it.";
  protocol::dsml::render_tool_calls({call}, out);
  return out;
}

struct Tally {
  size_t runs = 0, calls = 0, valid = 0, bad_arguments = 0, unparsed = 0;
  std::string first_problem, first_unparsed;
};

// Where the model goes on in its intent: after the longest end of the output (up to 32 bytes)
// that occurs in the intent, the occurrence nearest to where it was (forward preferred). So,
// like a model that reads its own output, it picks its intent up again after a byte it did not
// mean (a spelling the schema asked for, a value of the right type instead of its wrong one).
// False: the output matches the intent nowhere.
bool realign(const std::string& intent, const std::string& out, size_t& pos) {
  for (size_t m = std::min<size_t>(32, out.size()); m >= 1; --m) {
    const std::string_view suffix(out.data() + out.size() - m, m);
    size_t best = std::string::npos, best_d = std::string::npos;
    for (size_t at = intent.find(suffix); at != std::string::npos; at = intent.find(suffix, at + 1)) {
      const size_t next = at + m;
      const size_t d = next >= pos ? next - pos : 2 * (pos - next);
      if (d < best_d) {
        best_d = d;
        best = next;
      }
    }
    if (best != std::string::npos) {
      pos = best;
      return true;
    }
  }
  return false;
}

// One generation: the intent's next byte gets +13 over random logits (a new draw every step);
// once the intent is done or lost, closing bytes and the end are favoured.
void run(const json::object& tool, const std::vector<json::object>& tools, uint64_t seed, bool constrained,
         Tally& tally) {
  std::mt19937_64 rng(seed);
  const std::string script = intent(tool, rng);
  std::normal_distribution<float> noise(0, 1.5f);
  auto backend = std::make_shared<ScriptedBackend>("");
  std::shared_ptr<serving::TokenPolicy> policy;
  if (constrained)
    policy = std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{},
                                                        protocol::declared_tools(tools));
  sampler::SamplerConfig cfg;
  cfg.seed = seed + 1;
  sampler::Sampler sampler(cfg);
  std::string out;
  protocol::OutputParser parser(false);
  size_t pos = 0;
  const std::string closers = "\"}]</｜DSMLparmet>";
  for (size_t step = 0; step < 6000; ++step) {
    std::vector<float> l(257);
    for (float& x : l) x = noise(rng);
    const bool on_script = out.empty() || realign(script, out, pos);
    if (on_script && pos < script.size()) {
      l[static_cast<unsigned char>(script[pos])] += 13;
    } else {
      l[ScriptedBackend::kEos] += 9;
      for (char c : closers) l[static_cast<unsigned char>(c)] += 4;
    }
    const serving::Token t =
        serving::next_token(policy.get(), l, *backend, [&](std::span<const float> x) { return sampler.sample(x); });
    if (t == ScriptedBackend::kEos) break;
    const std::string b = backend->token_bytes(t);
    if (policy) policy->accepted(t, b);
    out += b;
    parser.feed(b);
    if (parser.tool_calls_done()) break;  // as the server stops decoding there
  }
  ++tally.runs;
  parser.finish();
  const protocol::ParsedMessage msg = parser.message();
  if (msg.status != protocol::ToolCallsStatus::Complete) {
    ++tally.unparsed;
    if (tally.first_unparsed.empty()) tally.first_unparsed = out;
    return;
  }
  for (const protocol::ParsedToolCall& call : msg.calls) {
    ++tally.calls;
    const json::object* declared = nullptr;
    for (const json::object& t : tools)
      if (t.at("name").as_string() == call.name) declared = &t;
    std::string why = declared ? "" : "undeclared tool " + call.name;
    boost::system::error_code ec;
    const json::value args = json::parse(call.arguments_json, ec);
    if (ec || !call.arguments_valid) why = "arguments are not JSON: " + call.arguments_json;
    if (why.empty() && valid(args, declared->at("parameters"), why)) {
      ++tally.valid;
      continue;
    }
    ++tally.bad_arguments;
    if (tally.first_problem.empty()) tally.first_problem = call.name + " " + call.arguments_json + ": " + why;
  }
}

Tally run_all(const std::string& file, size_t seeds, bool constrained) {
  const std::vector<json::object> tools = recorded_tools(file);
  EXPECT_FALSE(tools.empty()) << file;
  Tally tally;
  for (const json::object& tool : tools)
    for (uint64_t seed = 1; seed <= seeds; ++seed) run(tool, tools, seed * 7919, constrained, tally);
  return tally;
}

void expect_all_valid(const std::string& file) {
  const Tally before = run_all(file, 6, false);
  const Tally after = run_all(file, 6, true);
  std::printf("%s: unconstrained %zu/%zu calls schema-valid (%zu unparsed runs); constrained %zu/%zu (%zu unparsed)\n",
              file.c_str(), before.valid, before.calls, before.unparsed, after.valid, after.calls, after.unparsed);
  EXPECT_LT(before.valid, before.calls) << "the weak model must need the constraint";
  EXPECT_EQ(after.bad_arguments, 0u) << after.first_problem;
  // A run that is still inside the block after 6000 bytes (the random model lost in a string)
  // is what max_tokens would cut: a length stop, no call given out. Rare, and never invalid.
  EXPECT_LE(after.unparsed * 10, after.runs) << after.first_unparsed;
  EXPECT_EQ(after.calls + after.unparsed, after.runs);
}

// The DSML state itself: required parameters before the invoke closes, JSON values by their
// schema, string enums by their values.
TEST(ToolSchema, RequiredTypedAndEnumParameters) {
  const std::vector<json::object> tools = {json::parse(R"({"name":"read","parameters":{"type":"object",
      "properties":{"path":{"type":"string"},"limit":{"type":"integer"},"mode":{"type":"string","enum":["a","bc"]}},
      "required":["path"]}})")
                                               .as_object()};
  protocol::DsmlSamplingState st(false, {}, protocol::declared_tools(tools));
  st.feed("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"read\"");
  EXPECT_EQ(st.allowed(), (std::vector<std::string>{">\n<｜DSML｜parameter name=\""}));  // path is required
  EXPECT_FALSE(st.admits(">\n</｜DSML｜invoke>"));
  st.feed(">\n<｜DSML｜parameter name=\"path\" string=\"true\">/a</｜DSML｜parameter>");
  EXPECT_EQ(st.allowed(), (std::vector<std::string>{"\n<｜DSML｜parameter name=\"", "\n</｜DSML｜invoke>"}));
  st.feed("\n<｜DSML｜parameter name=\"limit\" string=\"false\">");
  EXPECT_TRUE(st.value_constrained());
  EXPECT_FALSE(st.admits("\"3\""));
  EXPECT_FALSE(st.admits("3.5"));
  EXPECT_TRUE(st.admits("30</｜DSML｜parameter>"));
  EXPECT_FALSE(st.admits("30</｜DSML｜param>"));
  st.feed("30</｜DSML｜parameter>\n<｜DSML｜parameter name=\"mode\" string=\"true\">");
  EXPECT_EQ(st.allowed(), (std::vector<std::string>{"a</｜DSML｜parameter>", "bc</｜DSML｜parameter>"}));
  EXPECT_FALSE(st.admits("b</"));
  st.feed("bc</｜DSML｜parameter>");
  EXPECT_EQ(st.allowed(), (std::vector<std::string>{"\n</｜DSML｜invoke>"}));  // every parameter given
}

TEST(ToolSchema, ClaudeCodeToolsGetSchemaValidArguments) { expect_all_valid("claude-code.jsonl"); }
TEST(ToolSchema, CodexToolsGetSchemaValidArguments) { expect_all_valid("codex.jsonl"); }
TEST(ToolSchema, OpencodeToolsGetSchemaValidArguments) { expect_all_valid("opencode.jsonl"); }

}  // namespace
}  // namespace ds4::test
