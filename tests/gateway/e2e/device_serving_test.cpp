// The serving path on the CUDA backend (docs/cuda.md §forward), run on the emulated device: the
// embedded agent model loaded with `--backend cuda` (load_model_on: placement and self-check)
// serves through the same Service as the CPU, with exact speculation (ngram and MTP drafters:
// verify and rollback on the device, the MTP drafter's block there too on the device's hidden
// states: docs/cuda.md §mtp) and the
// prefix cache (a warm session's snapshot taken from and restored to the device). Every reply
// must be the CPU's, token for token.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/mtp.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace ds4::test {
namespace {

using serving::Token;

struct Sink : serving::GenerationSink {
  std::promise<serving::GenerationResult> done;
  bool on_text(std::string_view) override { return true; }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

std::shared_ptr<serving::Ds4Backend> agent_backend(cuda::Backend backend) {
  LoadOptions load;
  load.threads = 2;
  ContextOptions ctx;
  ctx.context_length = 512;
  std::vector<std::string> log;
  LoadedModel m = load_model_on(backend, DS4D_AGENT_MODEL, load, [&](const std::string& l) { log.push_back(l); });
  EXPECT_EQ(m.model->info().device, backend == cuda::Backend::Cuda ? ComputeDevice::Cuda : ComputeDevice::Cpu);
  auto b = std::make_shared<serving::Ds4Backend>(std::move(m.model), std::move(m.tokenizer), "agent", ctx);
  b->set_drafter_model(MtpModel::load(DS4D_AGENT_MTP, b->model(), DS4D_AGENT_MODEL));
  return b;
}

struct Reply {
  std::vector<Token> tokens;
  serving::CacheOutcome cache = serving::CacheOutcome::Cold;
  size_t drafted = 0;
};

Reply run(serving::Service& s, const std::vector<Token>& prompt, size_t max_tokens) {
  auto sink = std::make_shared<Sink>();
  serving::GenerationJob job;
  job.prompt = prompt;
  job.sampling.temperature = 0;
  job.max_tokens = max_tokens;
  job.sink = sink;
  auto fut = sink->done.get_future();
  EXPECT_FALSE(s.submit(std::move(job)).has_value());
  const serving::GenerationResult r = fut.get();
  EXPECT_NE(r.finish, serving::FinishReason::Error) << r.error;
  return {r.completion, r.usage.cache, r.usage.drafted_tokens};
}

// Three turns: a chat turn, another conversation (the first goes warm), the first continued (its
// snapshot restored).
std::vector<Reply> conversation(const std::shared_ptr<serving::Ds4Backend>& b, std::shared_ptr<serving::Drafter> d,
                                size_t k) {
  serving::Metrics metrics;
  serving::ServiceConfig c;
  c.drafter = std::move(d);
  c.speculation_k = k;
  c.hot_bytes = 64ull << 20;
  c.checkpoint_min_tokens = 8;
  serving::Service s(c, metrics);
  s.set_backend(b);
  const std::string open = "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>";
  const std::vector<Token> first =
      b->encode(open + "Repeat after me: ls -la, ls -la, ls -la, ls -la.<｜Assistant｜></think>");
  std::vector<Reply> out;
  out.push_back(run(s, first, 14));
  out.push_back(run(s, b->encode(open + "What is two plus two?<｜Assistant｜></think>"), 6));
  std::vector<Token> again = first;
  again.insert(again.end(), out[0].tokens.begin(), out[0].tokens.end());
  const std::vector<Token> more = b->encode("<｜User｜>And again, briefly.<｜Assistant｜></think>");
  again.insert(again.end(), more.begin(), more.end());
  out.push_back(run(s, again, 10));
  return out;
}

TEST(DeviceServing, RepliesOnTheDeviceAreTheCpusWithSpeculationAndThePrefixCache) {
  SKIP_WITHOUT_GPU();
  const auto cpu = agent_backend(cuda::Backend::Cpu), dev = agent_backend(cuda::Backend::Cuda);
  struct Drafting {
    const char* name;
    std::shared_ptr<serving::Drafter> (*make)();
    size_t k;
  };
  const Drafting draftings[] = {
      {"ngram", [] { return std::shared_ptr<serving::Drafter>(serving::make_ngram_drafter()); }, 4},
      {"mtp", [] { return std::shared_ptr<serving::Drafter>(serving::make_mtp_drafter()); }, 3}};
  for (const Drafting& d : draftings) {
    const std::vector<Reply> want = conversation(cpu, d.make(), d.k), got = conversation(dev, d.make(), d.k);
    ASSERT_EQ(got.size(), want.size());
    size_t drafted = 0;
    for (size_t i = 0; i < want.size(); i++) {
      EXPECT_EQ(got[i].tokens, want[i].tokens) << d.name << " turn " << i;
      EXPECT_EQ(serving::cache_outcome_name(got[i].cache), serving::cache_outcome_name(want[i].cache))
          << d.name << " turn " << i;
      drafted += got[i].drafted;
    }
    EXPECT_EQ(serving::cache_outcome_name(got[2].cache), std::string("warm")) << d.name << ": nothing was restored";
    EXPECT_GT(drafted, 0u) << d.name << ": nothing was drafted, so nothing was verified or rolled back";
  }
}

}  // namespace
}  // namespace ds4::test
