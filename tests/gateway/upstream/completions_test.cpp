// The vLLM / SGLang adapter without a network: the request body against the one recorded from
// their documented fields (fixtures/*_request.json), their /v1/models and streamed answers
// (fixtures/*.sse, shapes from their protocol sources) told to a sink as a local worker would,
// and output the gateway must reject: a token the job's token policy would not have allowed,
// an id outside the vocabulary, an end where the policy may not end.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "gateway/protocol/json_constraint.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/json_format_policy.hpp"
#include "gateway/serving/no_tool_calls_policy.hpp"
#include "gateway/upstream/completions_stream.hpp"
#include "gateway/upstream/completions_wire.hpp"
#include "gateway/upstream/policy_check.hpp"
#include "gateway/upstream/upstream_client.hpp"
#include "gateway/upstream/vocab_probe.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::upstream {
namespace {
namespace json = boost::json;
using serving::FinishReason;
using test::ScriptedBackend;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(DS4D_UPSTREAM_FIXTURES) + "/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json::object without_comment(json::object o) {
  o.erase("//");
  return o;
}

struct Sink : serving::GenerationSink {
  std::string text;
  bool prefilled = false;
  size_t stop_after = 0;  // > 0: on_text answers false once this many bytes arrived
  bool on_text(std::string_view bytes) override {
    text += bytes;
    return stop_after == 0 || text.size() < stop_after;
  }
  void on_prefilled(const serving::GenerationUsage&) override { prefilled = true; }
  void on_finished(const serving::GenerationResult&) override {}
};

serving::GenerationJob job_with(std::shared_ptr<Sink> sink, std::shared_ptr<serving::TokenPolicy> policy = nullptr) {
  serving::GenerationJob job;
  job.prompt = {1, 2, 3, 250};
  job.sink = std::move(sink);
  job.policy = std::move(policy);
  return job;
}

// Feeds an SSE text line by line as the pool does; returns whether the stream read to its end.
bool feed(CompletionsStream& s, const std::string& sse) {
  std::istringstream in(sse);
  for (std::string line; std::getline(in, line);)
    if (!s.line(line)) return line == "data: [DONE]";
  s.close();
  return true;
}

// An SSE answer that samples `text` byte by byte (the test tokenizer's ids), `per_chunk` bytes a
// chunk, then ends with `finish`.
std::string answer(const std::string& text, const std::string& finish = "stop", size_t per_chunk = 3) {
  std::string sse;
  for (size_t i = 0; i < text.size(); i += per_chunk) {
    json::array ids;
    for (unsigned char c : text.substr(i, per_chunk)) ids.push_back(c);
    // The engine's text is not read; a cut through a UTF-8 character would not be JSON.
    json::object choice{{"index", 0}, {"text", ""}, {"token_ids", ids}, {"finish_reason", nullptr}};
    sse += "data: " + json::serialize(json::object{{"choices", json::array{choice}}}) + "\n\n";
  }
  json::object last{{"index", 0}, {"text", ""}, {"token_ids", json::array{}}, {"finish_reason", finish}};
  sse += "data: " + json::serialize(json::object{{"choices", json::array{last}}}) + "\n\ndata: [DONE]\n\n";
  return sse;
}

TEST(CompletionsWire, UrlsNameTheKind) {
  EXPECT_EQ(parse_upstream_url("http://10.0.0.1:8080").kind, UpstreamKind::Ds4d);
  UpstreamUrl v = parse_upstream_url("vllm+http://10.0.0.1:8000/");
  EXPECT_EQ(v.kind, UpstreamKind::Vllm);
  EXPECT_EQ(v.host, "10.0.0.1");
  EXPECT_EQ(v.port, "8000");
  EXPECT_EQ(v.text, "vllm+http://10.0.0.1:8000");
  EXPECT_EQ(parse_upstream_url("sglang+http://[::1]:30000").kind, UpstreamKind::Sglang);
  EXPECT_THROW(parse_upstream_url("tgi+http://h:1"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("vllm+https://h:1"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("vllm+http://h:1/v1"), std::invalid_argument);
}

TEST(CompletionsWire, RequestsCarryTheDocumentedFields) {
  serving::GenerationJob job;
  job.prompt = {1, 2, 3, 250};
  job.sampling.temperature = 0.5f;
  job.sampling.top_k = 40;
  job.sampling.top_p = 0.875f;
  job.sampling.min_p = 0.25f;
  job.sampling.seed = 1234;
  job.max_tokens = 77;
  job.stop = {"never sent"};  // cut by the gateway
  job.logit_bias = {{5, -100.0f}, {6, 2.5f}};
  job.logprobs = true;
  job.top_logprobs = 3;
  const std::vector<serving::Token> ends = {256};
  EXPECT_EQ(json::value(completions_request(job, UpstreamKind::Vllm, "ds4-flash", 4096, ends)),
            json::value(without_comment(json::parse(fixture("vllm_completions_request.json")).as_object())));

  job.sampling.top_k = 0;
  job.sampling.seed = 0;
  job.max_tokens = 0;
  job.logprobs = false;
  EXPECT_EQ(json::value(completions_request(job, UpstreamKind::Sglang, "ds4-flash", 4096, ends)),
            json::value(without_comment(json::parse(fixture("sglang_completions_request.json")).as_object())));
}

TEST(CompletionsWire, ModelsGiveNameAndContext) {
  ServedModel v = parse_served_models(fixture("vllm_models.json"));
  EXPECT_EQ(v.id, "ds4-flash");
  EXPECT_EQ(v.context_length, 65536u);
  ServedModel s = parse_served_models(fixture("sglang_models.json"));
  EXPECT_EQ(s.context_length, 32768u);
  EXPECT_EQ(parse_served_models(R"({"object":"list","data":[{"id":"m"}]})").context_length, 0u);
  EXPECT_THROW(parse_served_models(R"({"object":"list","data":[]})"), std::runtime_error);
  EXPECT_THROW(parse_served_models("<html>"), std::runtime_error);
}

TEST(CompletionsWire, ErrorAnswersOfBothShapes) {
  // vLLM's ErrorResponse: {"error": {...}} in recent versions, flat {"object": "error", ...} before.
  EXPECT_EQ(completions_error_message(
                R"({"error":{"message":"prompt is too long","type":"BadRequestError","param":null,"code":400}})"),
            "prompt is too long");
  EXPECT_EQ(completions_error_message(R"({"object":"error","message":"busy","type":"ServiceUnavailable","code":503})"),
            "busy");
  EXPECT_EQ(completions_error_message("plain text"), "plain text");
  std::optional<CompletionsChunk> e = parse_completions_line(R"(data: {"error":{"message":"engine died","code":500}})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->error, "engine died");
  EXPECT_FALSE(parse_completions_line(": keep-alive"));
  EXPECT_FALSE(parse_completions_line(""));
  EXPECT_THROW(parse_completions_line("data: {\"choices\":[{\"token_ids\":\"x\"}]}"), std::runtime_error);
}

TEST(CompletionsStream, RecordedStreamsReachTheSinkAsLocally) {
  auto backend = std::make_shared<ScriptedBackend>("");
  for (const char* name : {"vllm_completions_stream.sse", "sglang_completions_stream.sse"}) {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "vllm+http://u:1");
    EXPECT_TRUE(feed(s, fixture(name))) << name;
    EXPECT_TRUE(sink->prefilled);
    EXPECT_EQ(sink->text, "Hello world") << name;
    const serving::GenerationResult& r = s.result();
    EXPECT_EQ(r.finish, FinishReason::Eos) << r.error;
    EXPECT_EQ(backend->decode(r.completion), "Hello world");
    EXPECT_EQ(r.usage.prompt_tokens, 4u);
    EXPECT_EQ(r.usage.completion_tokens, 11u);  // the EOS the vLLM stream lists is not counted
    EXPECT_EQ(r.usage.cached_tokens, std::string(name).starts_with("vllm") ? 2u : 3u);
  }
}

TEST(CompletionsStream, StopStringsAndLimitsAsLocally) {
  auto backend = std::make_shared<ScriptedBackend>("");
  auto sink = std::make_shared<Sink>();
  serving::GenerationJob job = job_with(sink);
  job.stop = {"o w"};
  CompletionsStream s(job, *backend, "u");
  EXPECT_FALSE(feed(s, fixture("vllm_completions_stream.sse")));  // stops reading: closes the upstream call
  EXPECT_EQ(sink->text, "Hell");
  EXPECT_EQ(s.result().finish, FinishReason::StopSequence);

  auto sink2 = std::make_shared<Sink>();
  serving::GenerationJob limited = job_with(sink2);
  limited.max_tokens = 5;
  CompletionsStream l(limited, *backend, "u");
  EXPECT_TRUE(feed(l, answer("Hello", "length")));
  EXPECT_EQ(l.result().finish, FinishReason::MaxTokens);
  auto sink3 = std::make_shared<Sink>();
  serving::GenerationJob open = job_with(sink3);
  CompletionsStream c(open, *backend, "u");
  EXPECT_TRUE(feed(c, answer("Hello", "length")));
  EXPECT_EQ(c.result().finish, FinishReason::ContextFull);

  // The consumer stops (a tool-call block closed): the stream stops too.
  auto sink4 = std::make_shared<Sink>();
  sink4->stop_after = 4;
  serving::GenerationJob consumer = job_with(sink4);
  CompletionsStream k(consumer, *backend, "u");
  EXPECT_FALSE(feed(k, answer("Hello world", "stop", 1)));
  EXPECT_EQ(k.result().finish, FinishReason::ConsumerStop);
  EXPECT_EQ(sink4->text, "Hell");
}

TEST(CompletionsStream, BrokenStreamsAreErrorsNotAnswers) {
  auto backend = std::make_shared<ScriptedBackend>("");
  {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "vllm+http://u:1");
    EXPECT_THROW(feed(s, "data: {\"choices\":[{\"text\":\"a\",\"token_ids\":[97]}]}\n"), std::runtime_error);
    EXPECT_TRUE(s.committed());  // the pool ends it as lost, not failed over
  }
  {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "vllm+http://u:1");
    EXPECT_FALSE(feed(s, "data: {\"choices\":[{\"text\":\"?\",\"token_ids\":[97,900]}]}\n"));
    EXPECT_EQ(s.result().finish, FinishReason::Error);
    EXPECT_NE(s.result().error.find("token id 900, outside engine.tokenizer's vocabulary"), std::string::npos)
        << s.result().error;
    EXPECT_EQ(sink->text, "a");
  }
  {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "u");
    EXPECT_FALSE(feed(s,
                      "data: {\"choices\":[{\"text\":\"a\",\"token_ids\":[97]}]}\n\n"
                      "data: {\"error\":{\"message\":\"engine died\"}}\n"));
    EXPECT_EQ(s.result().finish, FinishReason::Error);
    EXPECT_NE(s.result().error.find("engine died"), std::string::npos);
  }
  {
    // An engine that ignores return_token_ids: text only, never an answer made of it.
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "u");
    EXPECT_FALSE(feed(s,
                      "data: {\"choices\":[{\"text\":\"Hi\",\"finish_reason\":null}]}\n\n"
                      "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n"));
    EXPECT_EQ(s.result().finish, FinishReason::Error);
    EXPECT_NE(s.result().error.find("without token_ids"), std::string::npos) << s.result().error;
    EXPECT_EQ(sink->text, "");
  }
  {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job = job_with(sink);
    CompletionsStream s(job, *backend, "u");
    EXPECT_TRUE(feed(s, answer("ab", "abort")));
    EXPECT_EQ(s.result().finish, FinishReason::Error);
  }
}

TEST(CompletionsStream, LogprobsByTokenId) {
  auto backend = std::make_shared<ScriptedBackend>("");
  auto sink = std::make_shared<Sink>();
  serving::GenerationJob job = job_with(sink);
  job.logprobs = true;
  job.top_logprobs = 2;
  CompletionsStream s(job, *backend, "u");
  EXPECT_TRUE(
      feed(s,
           "data: {\"choices\":[{\"text\":\"ab\",\"token_ids\":[97,98],\"logprobs\":{\"tokens\":[\"token_id:97\","
           "\"token_id:98\"],\"token_logprobs\":[-0.5,-1.5],\"top_logprobs\":[{\"token_id:97\":-0.5,\"token_id:"
           "99\":-1.0},{\"token_id:98\":-1.5,\"z\":-2.0}]}}]}\n\n"
           "data: {\"choices\":[{\"text\":\"\",\"token_ids\":[],\"finish_reason\":\"stop\"}]}\n\n"));
  const auto& lp = s.result().logprobs;
  ASSERT_EQ(lp.size(), 2u);
  EXPECT_EQ(lp[0].bytes, "a");
  EXPECT_FLOAT_EQ(lp[0].logprob, -0.5f);
  ASSERT_EQ(lp[0].top.size(), 2u);
  EXPECT_EQ(lp[0].top[1].first, "c");
  EXPECT_EQ(lp[1].top[1].first, "z");  // SGLang names alternatives by their text
}

protocol::OutputControls json_object() {
  protocol::OutputControls c;
  c.format = protocol::OutputControls::Format::JsonObject;
  return c;
}

// The token policies as checks: what a local ds4d would have allowed passes, the rest is an error.
const std::string kOpen = "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"";
const std::string kClose = "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>";

std::vector<protocol::DeclaredTool> weather() {
  std::vector<json::object> tools = {
      json::parse(R"({"name":"get_weather","parameters":{"type":"object","properties":{"city":{}}}})").as_object()};
  return protocol::declared_tools(tools);
}

serving::GenerationResult run(std::shared_ptr<serving::TokenPolicy> policy, const std::string& sampled,
                              std::string* text = nullptr) {
  auto backend = std::make_shared<ScriptedBackend>("");
  auto sink = std::make_shared<Sink>();
  serving::GenerationJob job = job_with(sink, std::move(policy));
  CompletionsStream s(job, *backend, "vllm+http://u:1");
  feed(s, answer(sampled));
  if (text) *text = sink->text;
  return s.result();
}

TEST(PolicyCheck, ToolCallsThatALocalTurnCouldWritePass) {
  auto backend = std::make_shared<ScriptedBackend>("");
  const std::string call =
      "Checking." + kOpen + "get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris" + kClose;
  std::string text;
  serving::GenerationResult r =
      run(std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{}, weather()), call, &text);
  EXPECT_EQ(r.finish, FinishReason::Eos) << r.error;
  EXPECT_EQ(text, call);
  r = run(
      std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{true, "get_weather"}, weather()),
      call.substr(9));
  EXPECT_EQ(r.finish, FinishReason::Eos) << r.error;
  EXPECT_EQ(run(std::make_shared<serving::NoToolCallsPolicy>(false), "plain <tool_calls> text").finish,
            FinishReason::Eos);
  EXPECT_EQ(run(serving::response_format_policy(backend, json_object(), false), "{\"a\": 1}").finish,
            FinishReason::Eos);
}

TEST(PolicyCheck, OutputALocalTurnCouldNotWriteIsRejected) {
  auto backend = std::make_shared<ScriptedBackend>("");
  std::string text;
  // An undeclared tool.
  serving::GenerationResult r =
      run(std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{}, weather()),
          "Ok." + kOpen + "rm_rf\">\n<｜DSML｜parameter name=\"city\" string=\"true\">x" + kClose, &text);
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("upstream vllm+http://u:1 produced output the gateway rejects"), std::string::npos) << r.error;
  EXPECT_EQ(text, "Ok." + kOpen);  // what came before the refused token
  // tool_choice required, and the model answers in prose.
  r = run(std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{true, ""}, weather()),
          "It is sunny.");
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("not one the token policy allows"), std::string::npos) << r.error;
  // tool_choice required, and the model ends at once.
  r = run(std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{true, ""}, weather()), "");
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("requires more"), std::string::npos) << r.error;
  // The output ends inside the block.
  r = run(std::make_shared<serving::DsmlTokenPolicy>(backend, false, protocol::ForcedCall{}, weather()),
          "x" + kOpen + "get_weather\">\n");
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("may not end"), std::string::npos) << r.error;
  // A turn without tools opens a block.
  r = run(std::make_shared<serving::NoToolCallsPolicy>(false), "Sure." + kOpen + "x\">", &text);
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("may not call tools"), std::string::npos) << r.error;
  // response_format json_object, and prose.
  r = run(serving::response_format_policy(backend, json_object(), false), "Here it is");
  EXPECT_EQ(r.finish, FinishReason::Error);
  EXPECT_NE(r.error.find("not admitted"), std::string::npos) << r.error;
}

// The vocabulary probe (docs/scale-out.md §vocabulary-probe): the request as recorded, a /tokenize
// answer of either engine that agrees, and one that does not, named by position, ids and text.
TEST(VocabProbe, RequestCarriesTheDocumentedFields) {
  for (const char* engine : {"vllm", "sglang"}) {
    const json::value want =
        without_comment(json::parse(fixture(std::string(engine) + "_tokenize_request.json")).as_object());
    EXPECT_EQ(json::parse(vocab_probe_request("ds4-flash-w4a16")), want) << engine;
  }
}

TEST(VocabProbe, TheSameVocabularyAgrees) {
  ScriptedBackend local("");
  for (const char* engine : {"vllm", "sglang"})
    EXPECT_EQ(vocab_probe_mismatch(fixture(std::string(engine) + "_tokenize.json"), local), std::nullopt) << engine;
}

TEST(VocabProbe, AnotherVocabularyIsNamedWhereItDiffers) {
  ScriptedBackend local("");
  json::object answer = json::parse(fixture("vllm_tokenize.json")).as_object();
  json::array& ids = answer["tokens"].as_array();
  ids[4] = ids[4].to_number<int64_t>() + 1;  // 'q' of "quick" becomes 'r'
  auto why = vocab_probe_mismatch(json::serialize(answer), local);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("position 4"), std::string::npos) << *why;
  EXPECT_NE(why->find("id 114 where engine.tokenizer has id 113 (\"q\")"), std::string::npos) << *why;

  ids.pop_back();
  ids[4] = 113;
  why = vocab_probe_mismatch(json::serialize(answer), local);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("ends at position " + std::to_string(ids.size())), std::string::npos) << *why;

  EXPECT_THROW(vocab_probe_mismatch("{\"count\":3}", local), std::runtime_error);
  EXPECT_THROW(vocab_probe_mismatch("not json", local), std::runtime_error);
}

}  // namespace
}  // namespace ds4::upstream
