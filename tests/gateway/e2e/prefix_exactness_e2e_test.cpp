// Exactness of prefix reuse on the real engine (the forged tiny DS4 model): a prompt served from
// the live context, a warm session, a disk checkpoint, or a disk checkpoint after a restart
// gives the same greedy completion as a cold prefill; and a context restored from a checkpoint
// file and continued gives bit-identical logits to one that prefilled everything.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <random>

#include "engine/model/model.hpp"
#include "gateway/cache/checkpoint_file.hpp"
#include "gateway/cache/disk_store.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using serving::CacheOutcome;

std::string tiny_model_path() {
  if (const char* p = std::getenv("DS4D_TINY_MODEL")) return p;
  return DS4D_FORGED_TINY_MODEL;
}

struct Sink : serving::GenerationSink {
  std::promise<serving::GenerationResult> done;
  bool on_text(std::string_view) override { return true; }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("ds4d-exact-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

class PrefixExactness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(tiny_model_path())) << tiny_model_path();
    LoadOptions load;
    load.threads = 2;
    ContextOptions ctx;
    ctx.context_length = 1024;
    backend_ = serving::Ds4Backend::load(tiny_model_path(), load, ctx);
  }
  static void TearDownTestSuite() { backend_.reset(); }

  std::unique_ptr<serving::Service> service(const fs::path& dir) {
    serving::ServiceConfig c;
    c.hot_bytes = dir.empty() ? 0 : (64u << 20);
    c.cache_dir = dir;
    c.disk_bytes = dir.empty() ? 0 : (256u << 20);
    c.checkpoint_min_tokens = 1;
    c.prefill_chunk_tokens = 64;  // several chunks per prompt
    auto s = std::make_unique<serving::Service>(c, metrics_);
    s->set_backend(backend_);
    return s;
  }

  static serving::GenerationResult run(serving::Service& s, const std::vector<serving::Token>& prompt,
                                       size_t max_tokens = 24) {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job;
    job.prompt = prompt;
    job.sampling.temperature = 0;  // greedy
    job.max_tokens = max_tokens;
    job.sink = sink;
    auto fut = sink->done.get_future();
    EXPECT_FALSE(s.submit(std::move(job)).has_value());
    return fut.get();
  }

  static std::vector<serving::Token> text(const std::string& t) { return backend_->encode(t); }

  static inline std::shared_ptr<serving::Ds4Backend> backend_;
  serving::Metrics metrics_;
};

TEST_F(PrefixExactness, LiveWarmDiskAndRestartGiveTheColdCompletion) {
  const auto first = text(
      "<｜begin▁of▁sentence｜>You are a careful assistant.<｜User｜>Write about rivers, "
      "mountains and the long history of the sea.<｜Assistant｜></think>");
  TempDir dir;
  auto s = service(dir.path);
  auto r1 = run(*s, first);
  ASSERT_EQ(r1.usage.cache, CacheOutcome::Cold);
  // The next turn: the first prompt, its answer, a new question.
  std::vector<serving::Token> second = first;
  second.insert(second.end(), r1.completion.begin(), r1.completion.end());
  auto more = text("<｜end▁of▁sentence｜><｜User｜>And now about deserts, briefly.<｜Assistant｜></think>");
  second.insert(second.end(), more.begin(), more.end());

  auto cold_service = service({});
  const auto cold = run(*cold_service, second);
  cold_service->stop(std::chrono::milliseconds(0));
  ASSERT_EQ(cold.usage.cache, CacheOutcome::Cold);
  ASSERT_FALSE(cold.completion.empty());

  const auto live = run(*s, second);
  EXPECT_EQ(live.usage.cache, CacheOutcome::Live);
  EXPECT_GE(live.usage.cached_tokens, first.size() + r1.completion.size() - 1);
  EXPECT_EQ(live.completion, cold.completion);

  const auto other =
      text("<｜begin▁of▁sentence｜>A different conversation.<｜User｜>Count to ten.<｜Assistant｜></think>");
  run(*s, other);
  const auto warm = run(*s, second);
  EXPECT_EQ(warm.usage.cache, CacheOutcome::Warm);
  // That prompt's warm restore point, before the reply's opening (<｜Assistant｜></think>).
  const size_t margin = serving::ServiceConfig{}.prompt_point_margin_tokens;
  EXPECT_EQ(warm.usage.cached_tokens, second.size() - margin);
  EXPECT_EQ(warm.completion, cold.completion);

  // Restart: the next process finds the conversation on disk.
  s->stop(std::chrono::milliseconds(0));
  s = service(dir.path);
  std::vector<serving::Token> third = second;
  third.push_back(second.back());  // a one-token extension: the checkpoints of `second` prefix it
  auto cold_service2 = service({});
  const auto cold3 = run(*cold_service2, third);
  cold_service2->stop(std::chrono::milliseconds(0));
  const auto disk = run(*s, third);
  EXPECT_EQ(disk.usage.cache, CacheOutcome::Disk);
  EXPECT_GE(disk.usage.cached_tokens, second.size() - margin);
  EXPECT_EQ(disk.completion, cold3.completion);
  s->stop(std::chrono::milliseconds(0));
}

TEST(CheckpointExactness, RestoredFromAFileAndContinuedIsBitIdenticalToAColdPrefill) {
  LoadOptions load;
  load.threads = 2;
  auto model = Model::load(tiny_model_path(), load);
  ContextOptions co;
  co.context_length = 1024;
  std::mt19937 rng(7);
  std::vector<int32_t> tokens(600);
  for (auto& t : tokens) t = int32_t(rng() % model->info().n_vocab);
  const size_t cut = 333;  // not on a compression boundary

  Context cold(model, co);
  cold.prefill(tokens);

  TempDir dir;
  cache::DiskStoreConfig dc;
  dc.dir = dir.path;
  dc.budget_bytes = 1 << 30;
  dc.model_fingerprint = 42;
  std::string name;
  {
    Context a(model, co);
    a.prefill(std::span(tokens.data(), cut));
    cache::Checkpoint c;
    c.tokens.assign(tokens.begin(), tokens.begin() + cut);
    c.state = a.snapshot();
    cache::DiskStore store(dc);
    name = *store.store(c);
  }
  cache::DiskStore store(dc);  // a new process's index
  auto c = store.load(name);
  ASSERT_TRUE(c);
  Context b(model, co);
  b.restore(c->state);
  b.prefill(std::span(tokens.data() + cut, tokens.size() - cut));
  ASSERT_EQ(b.logits().size(), cold.logits().size());
  EXPECT_EQ(std::memcmp(b.logits().data(), cold.logits().data(), cold.logits().size() * sizeof(float)), 0);
  EXPECT_EQ(b.snapshot(), cold.snapshot());
  for (int32_t x : {5, 77, 1234 % int32_t(model->info().n_vocab)}) {
    auto lb = b.decode(x);
    auto lc = cold.decode(x);
    EXPECT_EQ(std::memcmp(lb.data(), lc.data(), lc.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace ds4::test
