// Batched sessions on the real engine (docs/batching.md §scheduler): many jobs submitted at once
// to a Service with several slots, so that their decode rows, prefill slices and speculative
// verifies share engine steps in whatever composition the timing gives, must each produce what
// the same job produces served alone, token for token; the same for follow-up turns that find
// their conversation in a live slot or a warm snapshot. On the embedded agent model and the
// forged tiny model (full DS4 layout).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>

#include "gateway/serving/drafter.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/support/sha256.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using serving::Token;

struct Sink : serving::GenerationSink {
  std::string text;
  std::promise<serving::GenerationResult> done;
  bool on_text(std::string_view bytes) override {
    text += bytes;
    return true;
  }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

struct Case {
  std::vector<Token> prompt;
  size_t max_tokens = 16;
  float temperature = 0;  // > 0: sampled at a fixed seed
  bool speculation = false;
  std::string session;
};

struct Output {
  std::vector<Token> tokens;
  std::string text;
  serving::FinishReason finish = serving::FinishReason::Error;
  bool operator==(const Output& o) const { return tokens == o.tokens && text == o.text && finish == o.finish; }
};

class BatchedSessions : public ::testing::TestWithParam<const char*> {
 protected:
  static inline std::map<std::string, std::shared_ptr<serving::Ds4Backend>> backends_;

  void SetUp() override {
    const bool agent = std::string(GetParam()) == "agent";
    const char* env = std::getenv(agent ? "DS4D_AGENT_MODEL" : "DS4D_TINY_MODEL");
    path_ = env ? env : (agent ? DS4D_AGENT_MODEL : DS4D_FORGED_TINY_MODEL);
    ASSERT_TRUE(fs::exists(path_)) << path_;
    auto& b = backends_[path_];
    if (!b) {
      LoadOptions load;
      load.threads = 2;
      ContextOptions ctx;
      ctx.context_length = 1024;
      b = serving::Ds4Backend::load(path_, load, ctx);
    }
    backend_ = b;
  }
  static void TearDownTestSuite() { backends_.clear(); }

  std::unique_ptr<serving::Service> service(size_t max_batch, serving::Metrics& metrics) {
    serving::ServiceConfig c;
    c.max_batch = max_batch;
    c.max_queued_jobs = 256;
    c.prefill_tokens_beside_decode = 24;  // long prompts go in many slices beside decode rows
    c.hot_bytes = uint64_t{256} << 20;    // follow-ups may restore a warm snapshot instead
    c.checkpoint_min_tokens = 8;
    c.drafter = std::shared_ptr<serving::Drafter>(serving::make_ngram_drafter());
    c.speculation_k = 3;
    auto s = std::make_unique<serving::Service>(c, metrics);
    s->set_backend(backend_);
    return s;
  }

  // Chat turns of varying length (a few long enough to be sliced beside the others' decode
  // rows), greedy and sampled, some speculating. The forged model takes every other one.
  std::vector<Case> cases() const {
    const std::vector<std::string> topics = {"rivers",       "a sorting function", "prime numbers", "a shell loop",
                                             "JSON objects", "the weather",        "a short poem",  "the tool list"};
    std::vector<Case> out;
    for (size_t i = 0; i < 16; i++) {
      const std::string& t = topics[i % topics.size()];
      std::string user = fmt::format("Tell me about {}.", t);
      if (i % 4 == 1)
        for (int r = 0; r < 12; r++) user += fmt::format(" Consider {} again, from angle {}.", t, r);
      Case c;
      c.prompt = backend_->encode(
          fmt::format("<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>{}<｜Assistant｜></think>", user));
      c.max_tokens = 8 + (i * 5) % 17;
      c.temperature = i % 3 == 2 ? 0.8f : 0;
      c.speculation = i % 4 == 3;
      c.session = fmt::format("s{}", i);
      out.push_back(std::move(c));
    }
    if (std::string(GetParam()) == "agent") return out;
    std::vector<Case> some;
    for (size_t i = 0; i < out.size(); i += 2) some.push_back(out[i]);
    return some;
  }

  std::future<serving::GenerationResult> submit(serving::Service& s, const Case& c, std::shared_ptr<Sink>& sink) {
    sink = std::make_shared<Sink>();
    serving::GenerationJob job;
    job.prompt = c.prompt;
    job.sampling.temperature = c.temperature;
    job.sampling.seed = 1234 + c.prompt.size();
    job.max_tokens = c.max_tokens;
    job.speculation = c.speculation;
    job.session = c.session;
    job.sink = sink;
    auto f = sink->done.get_future();
    EXPECT_FALSE(s.submit(std::move(job)).has_value());
    return f;
  }

  // Every case submitted at once (batched) or one after another (solo).
  std::vector<Output> run(serving::Service& s, const std::vector<Case>& cs, bool all_at_once) {
    std::vector<std::shared_ptr<Sink>> sinks(cs.size());
    std::vector<std::future<serving::GenerationResult>> futures;
    std::vector<Output> out(cs.size());
    auto collect = [&](size_t i) {
      const serving::GenerationResult r = futures[i].get();
      EXPECT_NE(r.finish, serving::FinishReason::Error) << r.error;
      out[i] = {r.completion, sinks[i]->text, r.finish};
    };
    for (size_t i = 0; i < cs.size(); i++) {
      futures.push_back(submit(s, cs[i], sinks[i]));
      if (!all_at_once) collect(i);
    }
    if (all_at_once)
      for (size_t i = 0; i < cs.size(); i++) collect(i);
    return out;
  }

  static std::vector<Case> follow_ups(const std::vector<Case>& cs, const std::vector<Output>& first,
                                      const serving::EngineBackend& b) {
    std::vector<Case> out;
    for (size_t i = 0; i < cs.size(); i++) {
      Case c = cs[i];
      c.prompt.insert(c.prompt.end(), first[i].tokens.begin(), first[i].tokens.end());
      const std::vector<Token> more = b.encode("<｜User｜>And then?<｜Assistant｜></think>");
      c.prompt.insert(c.prompt.end(), more.begin(), more.end());
      out.push_back(std::move(c));
    }
    return out;
  }

  std::string path_;
  std::shared_ptr<serving::Ds4Backend> backend_;
};

std::string digest(const std::vector<Output>& outs) {
  std::string all;
  for (const Output& o : outs) all += o.text + '\0' + serving::finish_reason_name(o.finish) + '\0';
  return testing::sha256_hex(all);
}

long batched_steps(const serving::Metrics& m) {
  const std::string text = m.render();
  auto value = [&](const std::string& key) {
    const size_t at = text.find(key);
    return at == std::string::npos ? 0L : std::stol(text.substr(at + key.size()));
  };
  return value("ds4d_batch_sequences_count ") - value("ds4d_batch_sequences_bucket{le=\"1\"} ");
}

TEST_P(BatchedSessions, EverySessionGetsWhatItGetsServedAlone) {
  const std::vector<Case> cs = cases();
  serving::Metrics solo_metrics, batched_metrics;
  auto solo = service(1, solo_metrics);
  const std::vector<Output> base = run(*solo, cs, false);
  const std::vector<Case> next = follow_ups(cs, base, *backend_);
  const std::vector<Output> base_next = run(*solo, next, false);
  solo->stop(std::chrono::milliseconds(0));

  for (size_t max_batch : {4, 8}) {
    auto batched = service(max_batch, batched_metrics);
    const std::vector<Output> outs = run(*batched, cs, true);
    const std::vector<Output> outs_next = run(*batched, next, true);
    batched->stop(std::chrono::milliseconds(0));
    std::cout << fmt::format("batched model={} max_batch={} cases={} sha256 first={} (solo {}) next={} (solo {})\n",
                             GetParam(), max_batch, cs.size(), digest(outs), digest(base), digest(outs_next),
                             digest(base_next));
    for (size_t i = 0; i < cs.size(); i++) {
      EXPECT_TRUE(outs[i] == base[i]) << "max_batch " << max_batch << ", case " << i << ": " << outs[i].text
                                      << " | alone: " << base[i].text;
      EXPECT_TRUE(outs_next[i] == base_next[i]) << "max_batch " << max_batch << ", follow-up " << i;
    }
  }
  // The sessions did share steps (else nothing was tested).
  EXPECT_GT(batched_steps(batched_metrics), 10);
  EXPECT_EQ(batched_steps(solo_metrics), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, BatchedSessions, ::testing::Values("agent", "tiny"));

}  // namespace
}  // namespace ds4::test
