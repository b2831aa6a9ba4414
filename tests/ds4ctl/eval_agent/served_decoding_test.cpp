// The agent evaluator decodes as the server decodes: the same request, sampler settings and seed
// through the evaluator (ds4ctl/eval_agent's generate_reply) and through the serving worker
// (serving::Service, the job set up as the chat endpoint sets it up) must choose the same tokens,
// greedy and sampled, with and without the DSML token rules and a forced tool_choice. Both call
// serving::TurnDecoder; this holds the loops around it to the same steps (policy, weighing,
// sampler stream, feeding, where a tool-call block stops the turn).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <fstream>
#include <mutex>

#include "ds4ctl/eval_agent/agent_eval.hpp"
#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/utf8_assembler.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace ds4 {
namespace {

namespace json = boost::json;

// What the chat endpoint's sink does with the bytes that matter here: stops where a tool-call
// block closes (turn_stream.cpp), and keeps the result.
class CollectingSink final : public serving::GenerationSink {
 public:
  explicit CollectingSink(bool thinking) : parser_(thinking) {}
  bool on_text(std::string_view bytes) override {
    parser_.feed(utf8_.push(bytes));
    return !parser_.tool_calls_done();
  }
  void on_finished(const serving::GenerationResult& r) override {
    std::lock_guard lock(mu_);
    result_ = r;
    done_ = true;
    cv_.notify_all();
  }
  serving::GenerationResult wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return result_;
  }

 private:
  protocol::OutputParser parser_;
  protocol::Utf8Assembler utf8_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  serving::GenerationResult result_;
};

// The first case of `kind` in the committed 20, its request as JSON.
std::string request_of_kind(const std::string& kind) {
  std::ifstream in(DS4D_AGENT_DATA "/ds4-tiny-agent.eval20.jsonl");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && json::parse(line).at("kind").as_string() == kind)
      return json::serialize(json::parse(line).at("request"));
  ADD_FAILURE() << "no " << kind << " case";
  return {};
}

// The same request with tool_choice forcing its first declared tool.
std::string forcing_first_tool(const std::string& request) {
  json::object o = json::parse(request).as_object();
  const json::string name = o.at("tools").as_array().at(0).at("function").at("name").as_string();
  o["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
  return json::serialize(o);
}

class ServedDecoding : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LoadOptions lo;
    lo.threads = 2;
    backend_ = serving::Ds4Backend::load(DS4D_AGENT_MODEL, lo);
    seq_ = backend_->new_sequence();
  }
  static void TearDownTestSuite() {
    seq_.reset();
    backend_.reset();
  }

  // Through the worker: the job the chat endpoint would submit for this request.
  static std::vector<int32_t> served(const std::string& request, size_t max_new, agent_eval::Decoding decoding,
                                     const sampler::SamplerConfig& sampling) {
    const protocol::ChatRequest req = protocol::parse_chat_request(json::parse(request));
    const protocol::RenderResult rendered = protocol::render_chat(req, nullptr, protocol::ContractMode::Off);
    serving::Metrics metrics;
    serving::Service service({}, metrics);
    service.set_backend(backend_);
    serving::GenerationJob job;
    job.prompt = backend_->encode(rendered.text);
    job.sampling = sampling;
    job.max_tokens = max_new;
    if (decoding == agent_eval::Decoding::Served)
      job.policy = serving::chat_tool_policy(backend_, req, rendered.tools_active, rendered.text.ends_with("<think>"));
    auto sink = std::make_shared<CollectingSink>(rendered.thinking != protocol::Thinking::Off);
    job.sink = sink;
    EXPECT_FALSE(service.submit(std::move(job)).has_value());
    const serving::GenerationResult r = sink->wait();
    EXPECT_TRUE(r.error.empty()) << r.error;
    service.stop(std::chrono::milliseconds(0));
    return r.completion;
  }

  static void expect_same(const std::string& request, agent_eval::Decoding decoding,
                          const sampler::SamplerConfig& sampling, size_t max_new = 160) {
    const agent_eval::Reply r = agent_eval::generate_reply(backend_, *seq_, request, max_new, decoding, sampling);
    ASSERT_FALSE(r.tokens.empty());
    EXPECT_EQ(r.tokens, served(request, max_new, decoding, sampling)) << "evaluator output: " << r.output;
  }

  static std::shared_ptr<serving::Ds4Backend> backend_;
  static std::unique_ptr<serving::EngineSequence> seq_;
};

std::shared_ptr<serving::Ds4Backend> ServedDecoding::backend_;
std::unique_ptr<serving::EngineSequence> ServedDecoding::seq_;

sampler::SamplerConfig greedy() {
  sampler::SamplerConfig s;
  s.temperature = 0;
  return s;
}

sampler::SamplerConfig sampled(uint64_t seed) {
  sampler::SamplerConfig s;
  s.temperature = 1;
  s.seed = seed;
  return s;
}

TEST_F(ServedDecoding, ToolCallGreedyUnderTheTokenRules) {
  expect_same(request_of_kind("call"), agent_eval::Decoding::Served, greedy());
}

TEST_F(ServedDecoding, ToolCallSampledUnderTheTokenRules) {
  expect_same(request_of_kind("call"), agent_eval::Decoding::Served, sampled(7));
}

TEST_F(ServedDecoding, ForcedToolChoiceSampled) {
  expect_same(forcing_first_tool(request_of_kind("call")), agent_eval::Decoding::Served, sampled(11));
}

TEST_F(ServedDecoding, AnswerAndPlainChatSampled) {
  expect_same(request_of_kind("answer"), agent_eval::Decoding::Served, sampled(3));
  expect_same(request_of_kind("plain"), agent_eval::Decoding::Served, sampled(5));
}

TEST_F(ServedDecoding, ModelAloneGreedy) { expect_same(request_of_kind("call"), agent_eval::Decoding::Free, greedy()); }

}  // namespace
}  // namespace ds4
