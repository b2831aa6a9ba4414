// Gateway mode's pieces without a network: the engine protocol's JSON (a job and a result survive
// the round trip, the token policy is rebuilt from its spec, bad bodies name the field), route
// keys, rendezvous ranking (a node leaving moves only its keys) and upstream URLs.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>

#include "gateway/protocol/output_controls.hpp"
#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/json_format_policy.hpp"
#include "gateway/serving/no_tool_calls_policy.hpp"
#include "gateway/upstream/job_wire.hpp"
#include "gateway/upstream/route_key.hpp"
#include "gateway/upstream/upstream_client.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::upstream {
namespace {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

serving::GenerationJob sample_job() {
  serving::GenerationJob job;
  job.prompt = {1, 2, 3, 250};
  job.sampling.temperature = 0.7f;
  job.sampling.top_k = 40;
  job.sampling.top_p = 0.9f;
  job.sampling.min_p = 0.01f;
  job.sampling.seed = 0xfedcba9876543210ULL;  // above INT64_MAX
  job.max_tokens = 77;
  job.stop = {"</s>", std::string("\xff\x00z", 3)};
  job.logit_bias = {{5, -100.0f}, {6, 2.5f}};
  job.logprobs = true;
  job.top_logprobs = 3;
  job.session = "sess-1";
  job.speculation = false;
  job.deadline = Clock::now() + std::chrono::seconds(60);
  return job;
}

TEST(JobWire, JobSurvivesTheRoundTrip) {
  auto backend = std::make_shared<test::ScriptedBackend>("x");
  serving::GenerationJob job = sample_job();
  job.policy = std::make_shared<serving::NoToolCallsPolicy>(false);
  const json::value wire = json::parse(json::serialize(job_to_wire(job, Clock::now())));
  serving::GenerationJob back = job_from_wire(wire, backend);
  EXPECT_EQ(back.prompt, job.prompt);
  EXPECT_EQ(back.sampling.temperature, job.sampling.temperature);
  EXPECT_EQ(back.sampling.top_k, job.sampling.top_k);
  EXPECT_EQ(back.sampling.top_p, job.sampling.top_p);
  EXPECT_EQ(back.sampling.min_p, job.sampling.min_p);
  EXPECT_EQ(back.sampling.seed, job.sampling.seed);
  EXPECT_EQ(back.max_tokens, job.max_tokens);
  EXPECT_EQ(back.stop, job.stop);
  EXPECT_EQ(back.logit_bias, job.logit_bias);
  EXPECT_TRUE(back.logprobs);
  EXPECT_EQ(back.top_logprobs, 3u);
  EXPECT_EQ(back.session, "sess-1");
  EXPECT_FALSE(back.speculation);
  EXPECT_GT(back.deadline, Clock::now() + std::chrono::seconds(50));
  EXPECT_LT(back.deadline, Clock::now() + std::chrono::seconds(61));
  ASSERT_TRUE(back.policy);
  EXPECT_EQ(back.policy->spec, job.policy->spec);
  // The rebuilt policy acts as the original: no DSML marker into content.
  EXPECT_TRUE(back.policy->refuses("<｜DSML｜tool_calls>"));
  EXPECT_FALSE(back.policy->refuses("hello"));
}

TEST(JobWire, JsonFormatPolicyIsRebuiltWithItsSchema) {
  auto backend = std::make_shared<test::ScriptedBackend>("x");
  protocol::OutputControls output;
  output.format = protocol::OutputControls::Format::JsonSchema;
  output.schema = std::make_shared<const json::value>(json::parse(R"({"type":"integer"})"));
  serving::GenerationJob job = sample_job();
  job.policy = serving::response_format_policy(backend, output, false);
  serving::GenerationJob back = job_from_wire(job_to_wire(job, Clock::now()), backend);
  ASSERT_TRUE(back.policy);
  EXPECT_TRUE(back.policy->restricts());
  EXPECT_TRUE(back.policy->admits('7'));
  EXPECT_FALSE(back.policy->admits('"'));  // a string is not an integer
}

TEST(JobWire, APolicyWithoutSpecCannotTravel) {
  struct Bare final : serving::TokenPolicy {
    std::optional<serving::Token> choose(std::span<const float>) override { return std::nullopt; }
    void accepted(serving::Token, std::string_view) override {}
  };
  serving::GenerationJob job = sample_job();
  job.policy = std::make_shared<Bare>();
  EXPECT_THROW(job_to_wire(job, Clock::now()), std::invalid_argument);
}

TEST(JobWire, BadBodiesNameTheField) {
  auto backend = std::make_shared<test::ScriptedBackend>("x");
  auto param_of = [&](const char* body) {
    try {
      job_from_wire(json::parse(body), backend);
    } catch (const protocol::RequestError& e) {
      return e.param;
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"({"prompt":[1,999]})"), "prompt[1]");
  EXPECT_EQ(param_of(R"({})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[1],"policy":{"kind":"magic"}})"), "policy.kind");
  EXPECT_EQ(param_of(R"({"prompt":[1],"stop_hex":["abc"]})"), "stop_hex");
  EXPECT_EQ(param_of(R"({"prompt":[1],"temperature":"hot"})"), "temperature");
}

TEST(JobWire, ResultSurvivesTheRoundTrip) {
  serving::GenerationResult r;
  r.finish = serving::FinishReason::StopSequence;
  r.error = "none";
  r.usage.prompt_tokens = 10;
  r.usage.cached_tokens = 8;
  r.usage.completion_tokens = 2;
  r.usage.cache = serving::CacheOutcome::Warm;
  r.completion = {4, 5};
  r.logprobs.push_back({std::string("\xe2\x82", 2), -0.5f, {{"a", -1.0f}}});
  serving::GenerationResult back = result_from_wire(json::parse(json::serialize(result_to_wire(r))).as_object());
  EXPECT_EQ(back.finish, r.finish);
  EXPECT_EQ(back.error, r.error);
  EXPECT_EQ(back.usage.cached_tokens, 8u);
  EXPECT_EQ(back.usage.cache, serving::CacheOutcome::Warm);
  EXPECT_EQ(back.completion, r.completion);
  ASSERT_EQ(back.logprobs.size(), 1u);
  EXPECT_EQ(back.logprobs[0].bytes, r.logprobs[0].bytes);
  EXPECT_EQ(back.logprobs[0].top[0].first, "a");
}

TEST(RouteKey, SessionHintElseTheSystemPrefix) {
  serving::GenerationJob a, b, c;
  a.prompt = {0, 10, 11, 99, 20};  // 99: the user-turn token
  b.prompt = {0, 10, 11, 99, 21, 22};
  c.prompt = {0, 10, 12, 99, 20};
  EXPECT_EQ(route_key(a, 99), route_key(b, 99));  // same system+tools, another turn
  EXPECT_NE(route_key(a, 99), route_key(c, 99));
  a.session = "claude-session";
  EXPECT_EQ(route_key(a, 99), "claude-session");
}

TEST(RouteKey, RendezvousMovesOnlyTheKeysOfALeavingNode) {
  const std::vector<std::string> three{"http://a:1", "http://b:1", "http://c:1"};
  const std::vector<std::string> two{"http://a:1", "http://c:1"};
  std::set<size_t> winners;
  for (int k = 0; k < 1000; ++k) {
    const std::string key = "key-" + std::to_string(k);
    const auto order = rendezvous_order(key, three);
    ASSERT_EQ(std::set<size_t>(order.begin(), order.end()).size(), 3u);
    EXPECT_EQ(order, rendezvous_order(key, three));  // deterministic
    winners.insert(order[0]);
    const std::string& won = three[order[0]];
    const std::string& won_without_b = two[rendezvous_order(key, two)[0]];
    if (won != "http://b:1") {
      EXPECT_EQ(won_without_b, won) << key;
    } else EXPECT_EQ(won_without_b, three[order[1]]) << key;  // b's keys go to their next node
  }
  EXPECT_EQ(winners.size(), 3u);
}

TEST(UpstreamUrl, OnlyHttpHostPort) {
  const UpstreamUrl u = parse_upstream_url("http://127.0.0.1:8080/");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, "8080");
  EXPECT_EQ(u.text, "http://127.0.0.1:8080");
  EXPECT_EQ(parse_upstream_url("http://[::1]:9").host, "::1");
  EXPECT_THROW(parse_upstream_url("https://h:1"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("http://h"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("http://h:1/v1"), std::invalid_argument);
  EXPECT_THROW(parse_upstream_url("http://h:x"), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::upstream
