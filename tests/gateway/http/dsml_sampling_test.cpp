// DSML-safe sampling and tool_choice enforcement (serving/dsml_token_policy.hpp) with scripted
// logits: a model that is only mildly sure of the tool-call syntax (every other byte one logit
// behind) breaks the call when sampled at temperature 1, and keeps it intact when structure is
// greedy while its payloads are still sampled; a model that would answer in prose is made to
// open the forced call. Also the zone classification itself, and the whole path over HTTP.
#include "gateway/protocol/dsml_sampling.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
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

// A decode loop like the serving worker's: policy first, else the sampler.
std::string generate(const ScriptedLogits& model, serving::TokenPolicy* policy, uint64_t seed) {
  sampler::SamplerConfig cfg;  // temperature 1, the reference defaults
  cfg.seed = seed;
  sampler::Sampler sampler(cfg);
  ScriptedBackend bytes("");
  std::string out;
  for (size_t pos = 0; pos < model.size() + 64; ++pos) {
    auto logits = model.at(pos);
    std::optional<serving::Token> chosen = policy ? policy->choose(logits) : std::nullopt;
    serving::Token t = chosen ? *chosen : sampler.sample(logits);
    if (t == ScriptedBackend::kEos) break;
    std::string b = bytes.token_bytes(t);
    if (policy) policy->accepted(t, b);
    out += b;
  }
  return out;
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
