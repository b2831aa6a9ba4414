// DSML-safe sampling and tool_choice enforcement (serving/dsml_token_policy.hpp) with scripted
// logits: a model that is only mildly sure of the tool-call syntax (every other byte one logit
// behind) breaks the call when sampled at temperature 1, and keeps it intact when structure is
// greedy while its payloads are still sampled; a model that would answer in prose is made to
// open the forced call. Also the zone classification itself, and the whole path over HTTP.
#include "gateway/protocol/dsml_sampling.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <functional>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/token_choice.hpp"
#include "tests/gateway/server_harness.hpp"

namespace ds4::test {
namespace {

namespace json = boost::json;
using protocol::SamplingZone;

// How sure the scripted model is of each byte of its script.
enum class Sure { Weak, Strong, AnyLetter };
struct Piece {
  std::string text;
  Sure sure;
};

// The script's next byte gets logit 50. Weak: every other byte 49 (sampling at T=1 strays
// almost always). Strong: others 0. AnyLetter: a payload byte; other letters 49.5 (any letter
// is a fine value), the rest 0. The position advances one byte per sampled token whatever was
// sampled, so a strayed payload stays the same length; after the script, EOS.
class ScriptedLogits {
 public:
  explicit ScriptedLogits(std::vector<Piece> pieces) {
    for (auto& p : pieces)
      for (char c : p.text) bytes_.push_back({c, p.sure});
  }
  std::vector<float> at(size_t pos) const {
    std::vector<float> l(257, 0.0f);
    if (pos >= bytes_.size()) {
      l[ScriptedBackend::kEos] = 50;
      return l;
    }
    auto [c, sure] = bytes_[pos];
    for (int b = 0; b < 256; ++b) {
      bool letter = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
      if (sure == Sure::Weak) l[b] = 49;
      if (sure == Sure::AnyLetter && letter) l[b] = 49.5f;
    }
    l[static_cast<unsigned char>(c)] = 50;
    return l;
  }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::pair<char, Sure>> bytes_;
};

// Next-token logits for a position and the output so far.
using LogitsFn = std::function<std::vector<float>(size_t pos, const std::string& out)>;

// The serving worker's decode step (serving/token_choice.hpp): policy first, else the sampler
// (temperature 1, or greedy).
std::string generate(const LogitsFn& model, size_t max_len, serving::TokenPolicy* policy, uint64_t seed,
                     bool greedy = false, const serving::EngineBackend* vocab = nullptr) {
  sampler::SamplerConfig cfg;  // temperature 1, the reference defaults
  cfg.seed = seed;
  if (greedy) cfg.temperature = 0;
  sampler::Sampler sampler(cfg);
  ScriptedBackend bytes("");
  const serving::EngineBackend& backend = vocab ? *vocab : bytes;
  std::string out;
  for (size_t pos = 0; pos < max_len; ++pos) {
    auto logits = model(pos, out);
    serving::Token t =
        serving::next_token(policy, logits, backend, [&](std::span<const float> l) { return sampler.sample(l); });
    if (t == ScriptedBackend::kEos) break;
    std::string b = backend.token_bytes(t);
    if (policy) policy->accepted(t, b);
    out += b;
  }
  return out;
}

std::string generate(const ScriptedLogits& model, serving::TokenPolicy* policy, uint64_t seed) {
  return generate([&](size_t pos, const std::string&) { return model.at(pos); }, model.size() + 64, policy, seed);
}

// A model that knows a few whole replies, each with a logit: the next byte of every reply the
// output is still a prefix of gets that reply's logit (the highest wins), every other byte 0; a
// reply that ends there puts its logit on EOS. So its first choice is the best reply, and where
// that one is ruled out, the next best reply still matching. After the last: EOS.
struct Reply {
  std::string text;
  float logit;
};
LogitsFn replies(std::vector<Reply> known) {
  return [known = std::move(known)](size_t, const std::string& out) {
    std::vector<float> l(257, 0.0f);
    bool any = false;
    for (const Reply& r : known) {
      if (!r.text.starts_with(out)) continue;
      any = true;
      serving::Token t =
          r.text.size() == out.size() ? ScriptedBackend::kEos : static_cast<unsigned char>(r.text[out.size()]);
      l[t] = std::max(l[t], r.logit);
    }
    if (!any) l[ScriptedBackend::kEos] = 50;
    return l;
  };
}

const std::string kCallOpen = "Checking.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"";
const std::string kCallClose = "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
std::string city_call(const std::string& tool, const std::string& param) {
  return kCallOpen + tool + "\">\n<｜DSML｜parameter name=\"" + param + "\" string=\"true\">Paris" + kCallClose;
}

// The request's tools: get_weather(city, units) and check_file(path).
std::vector<protocol::DeclaredTool> weather_and_file() {
  std::vector<json::object> tools = {
      json::parse(R"({"name":"get_weather","parameters":{"type":"object","properties":{"city":{},"units":{}}}})")
          .as_object(),
      json::parse(R"({"name":"check_file","parameters":{"type":"object","properties":{"path":{}}}})").as_object()};
  return protocol::declared_tools(tools);
}

protocol::ParsedMessage parse(const std::string& text) {
  protocol::OutputParser parser(false);
  parser.feed(text);
  parser.finish();
  return parser.message();
}

const std::vector<Piece> kWriteCall = {
    // Whether to call a tool, and where a value ends, is the model's decision: it is sure of those.
    {"Saving.\n\n<｜DSML｜tool_calls>", Sure::Strong},
    {"\n<｜DSML｜invoke name=\"write\">\n<｜DSML｜parameter name=\"path\" string=\"true\">", Sure::Weak},
    {"notes", Sure::AnyLetter},
    {"</", Sure::Strong},
    {"｜DSML｜parameter>\n<｜DSML｜parameter name=\"lines\" string=\"false\">[\"", Sure::Weak},
    {"alpha", Sure::AnyLetter},
    {"\"", Sure::Strong},
    {",3]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>", Sure::Weak},
};

std::shared_ptr<const serving::EngineBackend> byte_backend() { return std::make_shared<ScriptedBackend>(""); }

TEST(DsmlSampling, StructureIsGreedyAndPayloadIsSampled) {
  ScriptedLogits model(kWriteCall);
  int intact_without = 0;
  bool payload_varied = false;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    // Sampled throughout, the syntax breaks.
    if (parse(generate(model, nullptr, seed)).status == protocol::ToolCallsStatus::Complete) ++intact_without;
    // With the policy the call is intact and its payloads are still sampled.
    serving::DsmlTokenPolicy policy(byte_backend(), false, {});
    std::string text = generate(model, &policy, seed);
    protocol::ParsedMessage m = parse(text);
    ASSERT_EQ(m.status, protocol::ToolCallsStatus::Complete) << text;
    ASSERT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(m.calls[0].name, "write");
    json::value args = json::parse(m.calls[0].arguments_json);
    std::string path(args.at("path").as_string());
    EXPECT_EQ(path.size(), 5u);
    EXPECT_EQ(args.at("lines").as_array().size(), 2u);
    EXPECT_EQ(args.at("lines").at(1).as_int64(), 3);
    if (path != "notes" || args.at("lines").at(0).as_string() != "alpha") payload_varied = true;
  }
  EXPECT_EQ(intact_without, 0);
  EXPECT_TRUE(payload_varied) << "payload bytes must use the request's sampling, not greedy";
}

TEST(DsmlSampling, ForcedFunctionOpensTheCallOfThatFunction) {
  ScriptedLogits prose({{"No tool is needed here.", Sure::Strong}});
  std::string free_text = generate(prose, nullptr, 1);
  EXPECT_EQ(free_text, "No tool is needed here.");

  serving::DsmlTokenPolicy named(byte_backend(), false, {true, "write"});
  std::string text = generate(prose, &named, 1);
  EXPECT_EQ(text.rfind("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"write\">\n", 0), 0u) << text;

  serving::DsmlTokenPolicy any(byte_backend(), false, {true, ""});
  text = generate(prose, &any, 1);
  EXPECT_EQ(text.rfind("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"", 0), 0u) << text;

  // With thinking the reasoning is free; the call is forced right after </think>.
  ScriptedLogits thinker({{"hmm</think>No tool.", Sure::Strong}});
  serving::DsmlTokenPolicy after_think(byte_backend(), true, {true, "write"});
  text = generate(thinker, &after_think, 1);
  EXPECT_EQ(text.rfind("hmm</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"write\">", 0), 0u) << text;
}

TEST(DsmlSampling, ZonesAlongACall) {
  protocol::DsmlSamplingState s(true);
  auto zone_after = [&](std::string_view text) {
    s.feed(text);
    return s.zone();
  };
  EXPECT_EQ(zone_after("I could write <｜DSML｜tool_calls> here"), SamplingZone::Free);  // reasoning
  EXPECT_EQ(zone_after("</think>Sure."), SamplingZone::Free);
  EXPECT_EQ(zone_after("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"w\">\n"), SamplingZone::Structural);
  EXPECT_EQ(zone_after("<｜DSML｜parameter name=\"p\" string=\"true\">"), SamplingZone::Payload);
  EXPECT_EQ(zone_after("a < b"), SamplingZone::Payload);
  EXPECT_EQ(zone_after("</"), SamplingZone::Structural);  // a closing tag may have begun
  EXPECT_EQ(zone_after("x"), SamplingZone::Payload);      // it had not
  EXPECT_EQ(zone_after("</｜DSML｜parameter>\n"), SamplingZone::Structural);
  EXPECT_EQ(zone_after("<｜DSML｜parameter name=\"j\" string=\"false\">{"), SamplingZone::Structural);
  EXPECT_EQ(zone_after("\"k"), SamplingZone::Payload);
  EXPECT_EQ(zone_after("\\\""), SamplingZone::Payload);  // an escaped quote stays in the string
  EXPECT_EQ(zone_after("\":"), SamplingZone::Structural);
  EXPECT_EQ(zone_after("1}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"), SamplingZone::Free);
}

TEST(DsmlSampling, DeclaredToolNames) {
  auto tools = weather_and_file();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "get_weather");
  ASSERT_EQ(tools[0].parameters.size(), 2u);
  EXPECT_EQ(tools[0].parameters[0].name, "city");
  EXPECT_EQ(tools[0].parameters[1].name, "units");
  EXPECT_EQ(tools[0].parameters[0].spelling, protocol::ValueSpelling::Either);  // no type given
  // The value's spelling follows a single schema type.
  std::vector<json::object> typed = {json::parse(R"({"name":"t","parameters":{"properties":{
      "s":{"type":"string"},"n":{"type":"integer"},"o":{"type":"object"},"u":{"type":["string","null"]}}}})")
                                         .as_object()};
  auto spellings = protocol::declared_tools(typed).at(0).parameters;
  ASSERT_EQ(spellings.size(), 4u);
  EXPECT_EQ(spellings[0].spelling, protocol::ValueSpelling::String);
  EXPECT_EQ(spellings[1].spelling, protocol::ValueSpelling::Json);
  EXPECT_EQ(spellings[2].spelling, protocol::ValueSpelling::Json);
  EXPECT_EQ(spellings[3].spelling, protocol::ValueSpelling::Either);
  // Names as they appear in DSML attributes; a tool without a string name is not callable.
  std::vector<json::object> odd = {json::parse(R"({"name":"a\"b"})").as_object(),
                                   json::parse(R"({"name":7})").as_object()};
  auto escaped = protocol::declared_tools(odd);
  ASSERT_EQ(escaped.size(), 1u);
  EXPECT_EQ(escaped[0].name, "a&quot;b");
  EXPECT_TRUE(escaped[0].parameters.empty());
}

TEST(DsmlSampling, CallsOnlyDeclaredToolsAndTheirParameters) {
  // The model would rather call fetch_weather(town), which the client does not have; next it
  // likes get_weather(town), then get_weather(city); check_file least.
  LogitsFn model = replies({{city_call("fetch_weather", "town"), 50},
                            {city_call("get_weather", "town"), 40},
                            {city_call("get_weather", "city"), 30},
                            {city_call("check_file", "path"), 20}});
  protocol::ParsedMessage free = parse(generate(model, 400, nullptr, 1, true));
  ASSERT_EQ(free.calls.size(), 1u);
  EXPECT_EQ(free.calls[0].name, "fetch_weather");

  // Under the declared names: the best declared tool by the model's own logits (get_weather,
  // though check_file has the lower token id), and the best of its parameters.
  for (bool greedy : {true, false}) {
    serving::DsmlTokenPolicy policy(byte_backend(), false, {}, weather_and_file());
    std::string text = generate(model, 400, &policy, 3, greedy);
    protocol::ParsedMessage m = parse(text);
    ASSERT_EQ(m.status, protocol::ToolCallsStatus::Complete) << text;
    ASSERT_EQ(m.calls.size(), 1u);
    EXPECT_EQ(m.calls[0].name, "get_weather");
    EXPECT_EQ(json::parse(m.calls[0].arguments_json), json::parse(R"({"city":"Paris"})")) << text;
  }

  // A parameter already given is not offered again; tool_choice "required" picks among the
  // declared tools too.
  protocol::DsmlSamplingState s(false, {true, ""}, weather_and_file());
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\"",
                                                   "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"check_file\""}));
  s.feed("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_");
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"weather\""}));
  s.feed("weather\">\n");
  // After the name: a parameter, or (none is required) the invoke's close (json-constraint.md).
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"<｜DSML｜parameter name=\"", "</｜DSML｜invoke>"}));
  s.feed("<｜DSML｜parameter name=\"");
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"city\"", "units\""}));
  s.feed("city\"");  // no type in its schema: either spelling
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{" string=\"true\">", " string=\"false\">"}));
  s.feed(" string=\"t");
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"rue\">"}));
  s.feed("rue\">");
  EXPECT_EQ(s.zone(), SamplingZone::Payload);
  EXPECT_TRUE(s.allowed().empty());
  s.feed("Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"");
  EXPECT_EQ(s.allowed(), (std::vector<std::string>{"units\""}));
  // Without declared tools nothing is constrained (the old behaviour).
  protocol::DsmlSamplingState open(false);
  open.feed("\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"");
  EXPECT_TRUE(open.allowed().empty());
}

TEST(DsmlSampling, ValueSpellingFollowsTheSchemaType) {
  // The model would write the integer as a string (and nest a parameter into it, a loose
  // "parameter without string" value); the schema says integer: string="false".
  std::vector<json::object> tools = {json::parse(R"({"name":"add","parameters":{"type":"object",
      "properties":{"n":{"type":"integer"}}}})")
                                         .as_object()};
  const std::string open = "x\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"add\">\n<｜DSML｜parameter name=\"n\"";
  const std::string close = "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  LogitsFn model = replies({{open + " string=\"true\">42" + close, 50}, {open + " string=\"false\">42" + close, 30}});
  protocol::ParsedMessage free = parse(generate(model, 400, nullptr, 1, true));
  ASSERT_EQ(free.calls.size(), 1u);
  EXPECT_EQ(json::parse(free.calls[0].arguments_json), json::parse(R"({"n":"42"})"));
  serving::DsmlTokenPolicy policy(byte_backend(), false, {}, protocol::declared_tools(tools));
  std::string text = generate(model, 400, &policy, 1, true);
  protocol::ParsedMessage m = parse(text);
  ASSERT_EQ(m.calls.size(), 1u) << text;
  EXPECT_EQ(json::parse(m.calls[0].arguments_json), json::parse(R"({"n":42})")) << text;
}

// Bytes plus two merged tokens, as a real BPE vocabulary has them: `">` and ` name="wea`.
class MergedBackend final : public ScriptedBackend {
 public:
  static constexpr serving::Token kQuoteClose = 257, kNameWea = 258;
  MergedBackend() : ScriptedBackend("") {}
  size_t vocab_size() const override { return 259; }
  std::string token_bytes(serving::Token t) const override {
    if (t == kQuoteClose) return "\">";
    if (t == kNameWea) return " name=\"wea";
    return ScriptedBackend::token_bytes(t);
  }
};

TEST(DsmlSampling, AMergedTokenCannotRunPastAConstraint) {
  // The model likes the merged tokens best: ` name="wea` (an undeclared weather_now) and `">`
  // right after the parameter's name (no value spelling: a loose value). Each runs past an
  // allowed continuation into text the next constraint does not allow.
  auto merged = std::make_shared<MergedBackend>();
  const std::string head = "x\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke";
  const std::string rest =
      "\">\n<｜DSML｜parameter name=\"n\" string=\"false\">42</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  LogitsFn bytes = replies({{head + " name=\"add" + rest, 30}});
  LogitsFn model = [&](size_t pos, const std::string& out) {
    std::vector<float> l = bytes(pos, out);
    l.resize(259, 0.0f);
    if (out == head) l[MergedBackend::kNameWea] = 60;
    if (out.ends_with("parameter name=\"n")) l[MergedBackend::kQuoteClose] = 60;
    return l;
  };
  std::vector<json::object> tools = {json::parse(R"({"name":"add","parameters":{"type":"object",
      "properties":{"n":{"type":"integer"}}}})")
                                         .as_object()};
  serving::DsmlTokenPolicy policy(merged, false, {}, protocol::declared_tools(tools));
  std::string text = generate(model, 400, &policy, 1, true, merged.get());
  protocol::ParsedMessage m = parse(text);
  ASSERT_EQ(m.calls.size(), 1u) << text;
  EXPECT_EQ(m.calls[0].name, "add") << text;
  EXPECT_EQ(json::parse(m.calls[0].arguments_json), json::parse(R"({"n":42})")) << text;
}

// A sequence over a LogitsFn model (tokens are bytes), which can take back `room` tokens.
class ModelSequence final : public serving::EngineSequence {
 public:
  ModelSequence(LogitsFn model, size_t room) : model_(std::move(model)), room_(room) {}
  const std::vector<serving::Token>& tokens() const override { return tokens_; }
  size_t capacity() const override { return 4096; }
  void clear() override { tokens_.clear(); }
  void append(std::span<const serving::Token> t) override { tokens_.insert(tokens_.end(), t.begin(), t.end()); }
  std::span<const float> logits() const override {
    std::string out(tokens_.begin(), tokens_.end());
    logits_ = model_(tokens_.size(), out);
    return logits_;
  }
  size_t truncate_floor() const override { return room_ ? 0 : tokens_.size(); }
  size_t rollback_room() const override { return room_; }
  void truncate(size_t n) override { tokens_.resize(n); }

 private:
  LogitsFn model_;
  size_t room_;
  std::vector<serving::Token> tokens_;
  mutable std::vector<float> logits_;
};

// The serving worker's loop (service_turn.cpp), greedy: choose_token, append.
std::string generate_on(ModelSequence& seq, serving::TokenPolicy& policy) {
  ScriptedBackend bytes("");
  auto greedy = [](std::span<const float> l) { return sampler::argmax(l); };
  std::vector<float> held;
  std::string out;
  for (int n = 0; n < 400; ++n) {
    serving::Token t = serving::choose_token(&policy, seq, bytes, greedy, held);
    if (t == ScriptedBackend::kEos) break;
    policy.accepted(t, bytes.token_bytes(t));
    out += bytes.token_bytes(t);
    seq.append(std::span<const serving::Token>(&t, 1));
  }
  return out;
}

TEST(DsmlSampling, NamesAreWeighedWholeWhereTheFirstTokenMisleads) {
  // The model wants forecast(), which the client does not have. Of the declared names its first
  // byte favours w (wind_speed), though it has no idea how that name goes on; get_weather it
  // would write with confidence.
  std::vector<json::object> tools = {
      json::parse(R"({"name":"wind_speed","parameters":{"properties":{"city":{}}}})").as_object(),
      json::parse(R"({"name":"get_weather","parameters":{"properties":{"city":{}}}})").as_object()};
  LogitsFn model =
      replies({{city_call("forecast", "city"), 50}, {kCallOpen + "wi", 35}, {city_call("get_weather", "city"), 30}});
  for (size_t room : {size_t{0}, size_t{64}}) {
    ModelSequence seq(model, room);
    serving::DsmlTokenPolicy policy(byte_backend(), false, {}, protocol::declared_tools(tools));
    std::string text = generate_on(seq, policy);
    EXPECT_EQ(seq.tokens().size(), text.size());  // every weighed token was taken back
    if (!room) {
      // Without rollback nothing can be weighed: the first token decides (and the model, lost
      // in a name it does not know, never finds its way back to a closed call).
      EXPECT_NE(text.find("invoke name=\"wind_speed\""), std::string::npos) << text;
      continue;
    }
    protocol::ParsedMessage m = parse(text);
    ASSERT_EQ(m.calls.size(), 1u) << text;
    EXPECT_EQ(m.calls[0].name, "get_weather") << text;
    EXPECT_EQ(json::parse(m.calls[0].arguments_json), json::parse(R"({"city":"Paris"})")) << text;
  }
}

TEST(DsmlSampling, AToolIsChosenByItsCallOpening) {
  // The model is sure of a declared name, get_weather (its reasoning named it), but the parameter
  // it goes on to write is check_file's: path. Weighed by the name alone, or left to the first
  // token, get_weather stands; weighed with each tool's call opening up to its first parameter's
  // name, check_file(path) is the likelier call.
  LogitsFn model = replies({{city_call("get_weather", "path"), 50}, {city_call("check_file", "path"), 45}});
  ModelSequence seq(model, 64);
  serving::DsmlTokenPolicy policy(byte_backend(), false, {}, weather_and_file());
  std::string text = generate_on(seq, policy);
  EXPECT_EQ(seq.tokens().size(), text.size());
  protocol::ParsedMessage m = parse(text);
  ASSERT_EQ(m.calls.size(), 1u) << text;
  EXPECT_EQ(m.calls[0].name, "check_file") << text;
  EXPECT_EQ(json::parse(m.calls[0].arguments_json), json::parse(R"({"path":"Paris"})")) << text;

  // The texts weighed: a tool name with its opening; a parameter name as it is.
  protocol::DsmlSamplingState s(false, {}, weather_and_file());
  s.feed(kCallOpen);
  EXPECT_EQ(s.name_choice_texts(), (std::vector<std::string>{"get_weather\">\n<｜DSML｜parameter name=\"city\"",
                                                             "check_file\">\n<｜DSML｜parameter name=\"path\""}));
  s.feed("get_weather\">\n<｜DSML｜parameter name=\"");
  EXPECT_EQ(s.name_choice_texts(), (std::vector<std::string>{"city\"", "units\""}));
}

TEST(DsmlSampling, NoEndInsideTheBlock) {
  // The model's first choice ends inside the call: in a parameter's value (payload, sampled),
  // or between tags (structure, greedy). Its second choice closes the call.
  const std::string cut_in_value = kCallOpen + "get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris";
  const std::string cut_in_structure = city_call("get_weather", "city").substr(0, cut_in_value.size() + 23);
  for (const std::string& cut : {cut_in_value, cut_in_structure}) {
    LogitsFn model = replies({{cut, 50}, {city_call("get_weather", "city"), 30}});
    EXPECT_EQ(parse(generate(model, 400, nullptr, 1, true)).status, protocol::ToolCallsStatus::Unterminated);
    serving::DsmlTokenPolicy policy(byte_backend(), false, {}, weather_and_file());
    std::string text = generate(model, 400, &policy, 1, true);
    EXPECT_EQ(parse(text).status, protocol::ToolCallsStatus::Complete) << text;
    EXPECT_TRUE(policy.may_end());  // after the block
  }
  // Outside a block the model may end where it likes.
  LogitsFn prose = replies({{"Done.", 50}, {"Done. More.", 30}});
  serving::DsmlTokenPolicy policy(byte_backend(), false, {}, weather_and_file());
  EXPECT_EQ(generate(prose, 400, &policy, 1, true), "Done.");
}

TEST(DsmlSampling, UndeclaredNamesNeverReachTheClientOverHttp) {
  // The scripted model misspells the tool and its parameter; the client only has get_weather(city).
  Harness h({}, {}, true,
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weathex\">\n<｜DSML｜parameter name=\"citx\" "
            "string=\"true\">Paris" +
                kCallClose);
  h.backend->keep_position = true;
  auto c = h.client();
  auto r = c.request(bhttp::verb::post, "/v1/chat/completions",
                     R"({"thinking":false,"max_tokens":200,"messages":[{"role":"user","content":"weather in Paris?"}],
                         "tools":[{"type":"function","function":{"name":"get_weather",
                           "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  auto msg = json::parse(r.body()).at("choices").at(0).at("message");
  ASSERT_TRUE(msg.as_object().contains("tool_calls")) << r.body();
  auto fn = msg.at("tool_calls").at(0).at("function");
  EXPECT_EQ(fn.at("name").as_string(), "get_weather") << r.body();
  EXPECT_EQ(json::parse(fn.at("arguments").as_string()), json::parse(R"({"city":"Paris"})")) << r.body();
}

TEST(DsmlSampling, ADeferredToolLoadedByToolSearchIsCallable) {
  // Claude Code's ToolSearch answered with a tool_reference to the deferred WebFetch; the model
  // then calls it (misspelt, as before): the loaded tool is among the names a call may take.
  Harness h({}, {}, true,
            "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"WebFetcx\">\n<｜DSML｜parameter name=\"urx\" "
            "string=\"true\">example.com" +
                kCallClose);
  h.backend->keep_position = true;
  auto c = h.client();
  auto r = c.request(bhttp::verb::post, "/v1/messages",
                     R"({"max_tokens":200,"thinking":{"type":"disabled"},
                         "tools":[{"name":"ToolSearch","input_schema":{"type":"object",
                                     "properties":{"query":{"type":"string"}}}},
                                  {"name":"WebFetch","defer_loading":true,"input_schema":{"type":"object",
                                     "properties":{"url":{"type":"string"}}}}],
                         "messages":[{"role":"user","content":"Fetch example.com"},
                           {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch",
                              "input":{"query":"select:WebFetch"}}]},
                           {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
                              "content":[{"type":"tool_reference","tool_name":"WebFetch"}]}]}]})");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  const json::value body = json::parse(r.body());
  const json::value* use = nullptr;
  for (const auto& block : body.at("content").as_array())
    if (block.at("type").as_string() == "tool_use") use = &block;
  ASSERT_NE(use, nullptr) << r.body();
  EXPECT_EQ(use->at("name").as_string(), "WebFetch") << r.body();
  EXPECT_EQ(use->at("input"), json::parse(R"({"url":"example.com"})")) << r.body();
}

TEST(DsmlSampling, RequiredToolChoiceOverHttpOpensTheNamedCall) {
  Harness h({}, {}, true, "No tool is needed.");
  auto c = h.client();
  const std::string tools =
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
  auto r = c.request(bhttp::verb::post, "/v1/chat/completions",
                     R"({"thinking":false,"stream":true,"max_tokens":80,"messages":[{"role":"user","content":"hi"}],
                         "tool_choice":{"type":"function","function":{"name":"get_weather"}},)" +
                         tools + "}");
  ASSERT_EQ(r.result_int(), 200) << r.body();
  std::string name;
  for (const auto& data : HttpTestClient::sse_data(r.body())) {
    if (data == "[DONE]") continue;
    auto v = json::parse(data);
    if (v.at("choices").as_array().empty()) continue;
    auto& delta = v.at("choices").at(0).at("delta").as_object();
    if (auto* calls = delta.if_contains("tool_calls"))
      if (auto* fn = calls->at(0).as_object().if_contains("function"); fn && fn->as_object().contains("name"))
        name = std::string(fn->at("name").as_string());
  }
  EXPECT_EQ(name, "get_weather") << r.body();
  // A forced function that is not among the tools is named as the bad field.
  r = c.request(bhttp::verb::post, "/v1/chat/completions",
                R"({"thinking":false,"messages":[{"role":"user","content":"hi"}],
                    "tool_choice":{"type":"function","function":{"name":"nope"}},)" +
                    tools + "}");
  ASSERT_EQ(r.result_int(), 400);
  EXPECT_EQ(json::parse(r.body()).at("error").at("param").as_string(), "tool_choice");
}

}  // namespace
}  // namespace ds4::test
