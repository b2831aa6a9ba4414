// Continuous batching on the scripted engine (docs/batching.md §scheduler): the StepBatcher's
// step forming (decode rows first, prefill sliced beside them), and the Service's slots (several
// jobs at once, the rest queued, cancellation freeing a slot, a session finding its own live
// context, a long prompt not freezing a running stream). Bit-identity with the real engine:
// tests/gateway/e2e/batched_sessions_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/serving/step_batcher.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace ds4::test {
namespace {

using serving::Token;
using namespace std::chrono_literals;

// Records every step's entries (tokens and kind), then runs them as the default does.
class RecordingBackend : public ScriptedBackend {
 public:
  using ScriptedBackend::ScriptedBackend;
  struct Entry {
    const serving::EngineSequence* sequence;
    size_t tokens;
    bool all_logits;
  };
  void step(std::span<serving::StepEntry> entries) override {
    {
      std::lock_guard lock(mu);
      std::vector<Entry> s;
      for (auto& e : entries) s.push_back({e.sequence, e.tokens.size(), e.all_logits});
      steps.push_back(std::move(s));
    }
    ScriptedBackend::step(entries);
  }
  std::vector<std::vector<Entry>> recorded() {
    std::lock_guard lock(mu);
    return steps;
  }
  std::mutex mu;
  std::vector<std::vector<Entry>> steps;
};

template <class F>
bool eventually(F f, std::chrono::milliseconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return f();
}

std::vector<Token> bytes(const std::string& s) { return std::vector<Token>(s.begin(), s.end()); }

TEST(StepBatcher, RunsWaitingSequencesTogetherAndSlicesAPrefillBesideDecodeRows) {
  RecordingBackend backend("abcdefgh");
  serving::StepBatcherConfig config;
  config.max_rows = 512;
  config.prefill_rows_beside_decode = 16;
  config.min_grace = 50ms;  // the threads come back well within it, however loaded the machine
  serving::StepBatcher batcher(backend, config);
  std::vector<std::unique_ptr<serving::EngineSequence>> inner;
  std::vector<std::unique_ptr<serving::BatchedSequence>> seqs;
  for (int i = 0; i < 3; i++) {
    inner.push_back(backend.new_sequence());
    seqs.push_back(batcher.wrap(*inner.back()));
  }
  // The first step is held inside the engine until the other two sessions wait too, so the
  // second step holds both of them whatever the threads' timing.
  backend.close_gate();
  std::vector<std::thread> threads;
  const std::vector<Token> prompt(100, 'p');
  threads.emplace_back([&] {
    for (int t = 0; t < 12; t++) seqs[0]->append(std::vector<Token>{Token('a' + t)});
    seqs[0]->idle();
  });
  ASSERT_TRUE(backend.wait_until_blocked(5s));
  threads.emplace_back([&] {
    for (int t = 0; t < 12; t++) seqs[1]->append(std::vector<Token>{Token('A' + t)});
    seqs[1]->idle();
  });
  threads.emplace_back([&] {
    seqs[2]->append(prompt);
    seqs[2]->idle();
  });
  ASSERT_TRUE(eventually([&] { return batcher.engaged() == 3; }));
  std::this_thread::sleep_for(20ms);  // both are queued behind the held step by now
  backend.open_gate();
  for (auto& t : threads) t.join();

  // Every token arrived, in order, on its own sequence.
  std::vector<Token> want0, want1;
  for (int t = 0; t < 12; t++) want0.push_back(Token('a' + t)), want1.push_back(Token('A' + t));
  EXPECT_EQ(seqs[0]->tokens(), want0);
  EXPECT_EQ(seqs[1]->tokens(), want1);
  EXPECT_EQ(seqs[2]->tokens(), prompt);
  const auto steps = backend.recorded();
  size_t shared = 0, prefill_slices = 0;
  for (const auto& step : steps) {
    size_t decode = 0, prefill = 0;
    for (const auto& e : step) (e.tokens == 1 ? decode : prefill) += e.tokens;
    if (step.size() > 1) shared++;
    if (prefill > 0) prefill_slices++;
    // Beside decode rows a prompt takes at most its budget; decode rows come first.
    if (decode > 0) {
      EXPECT_LE(prefill, config.prefill_rows_beside_decode);
    }
    if (step.size() > 1) {
      EXPECT_EQ(step.front().tokens, 1u);
    }
  }
  EXPECT_GE(shared, 1u) << steps.size() << " steps, none shared";
  EXPECT_GE(prefill_slices, 2u) << "the 100-token prompt was not sliced beside the decode rows";
  EXPECT_EQ(batcher.engaged(), 0u);
}

// An MTP drafter drafts through the batched sequence, outside any step (BatchedSequence used to
// leave model_draft at the base class's "no draft head": the batched worker never drafted with an
// MTP block).
TEST(StepBatcher, ForwardsTheModelsDraftHeadOutsideTheSteps) {
  class DraftingSequence final : public ScriptedSequence {
   public:
    using ScriptedSequence::ScriptedSequence;
    std::vector<Token> model_draft(Token next, size_t k) override { return std::vector<Token>(k, next); }
  };
  ScriptedBackend backend("xy");
  serving::StepBatcher batcher(backend, serving::StepBatcherConfig{});
  DraftingSequence inner(backend);
  auto seq = batcher.wrap(inner);
  seq->append(std::vector<Token>{'a'});
  EXPECT_EQ(batcher.engaged(), 1u);
  EXPECT_EQ(seq->model_draft('b', 2), (std::vector<Token>{'b', 'b'}));
  EXPECT_EQ(batcher.engaged(), 0u);  // steps do not wait while it drafts
}

TEST(StepBatcher, AnEntrysFailureReachesOnlyItsOwnCaller) {
  ScriptedBackend backend("xy", /*capacity=*/8);
  serving::StepBatcher batcher(backend, {});
  auto a_inner = backend.new_sequence(), b_inner = backend.new_sequence();
  auto a = batcher.wrap(*a_inner), b = batcher.wrap(*b_inner);
  EXPECT_THROW(a->append(std::vector<Token>(9, 'z')), std::length_error);  // past capacity
  a->append(std::vector<Token>{'q'});
  b->append(std::vector<Token>{'r', 's'});
  EXPECT_EQ(a->tokens(), bytes("q"));
  EXPECT_EQ(b->tokens(), bytes("rs"));
}

struct Sink : serving::GenerationSink {
  std::string text;                 // read once the result is in (the promise orders it)
  std::atomic<size_t> streamed{0};  // text's length, for polling while the job runs
  std::promise<serving::GenerationResult> done;
  std::atomic<size_t> queued_at{0};
  void on_queued(size_t position) override { queued_at = position; }
  bool on_text(std::string_view b) override {
    text += b;
    streamed = text.size();
    return true;
  }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

struct Submitted {
  std::shared_ptr<Sink> sink;
  std::future<serving::GenerationResult> result;
  serving::CancelFlag cancel;
};

Submitted submit(serving::Service& s, std::vector<Token> prompt, size_t max_tokens) {
  Submitted out;
  out.sink = std::make_shared<Sink>();
  out.result = out.sink->done.get_future();
  serving::GenerationJob job;
  job.prompt = std::move(prompt);
  job.sampling.temperature = 0;
  job.max_tokens = max_tokens;
  job.sink = out.sink;
  out.cancel = job.cancelled;
  EXPECT_FALSE(s.submit(std::move(job)).has_value());
  return out;
}

long histogram_count_above_one(const std::string& metrics) {
  auto value = [&](const std::string& key) {
    size_t at = metrics.find(key);
    return at == std::string::npos ? -1L : std::stol(metrics.substr(at + key.size()));
  };
  return value("ds4d_batch_sequences_count ") - value("ds4d_batch_sequences_bucket{le=\"1\"} ");
}

TEST(BatchedService, RunsUpToMaxBatchJobsAtOnceQueuesTheRestAndACancelFreesASlot) {
  auto backend = std::make_shared<RecordingBackend>("0123456789");
  backend->endless = true;
  backend->decode_delay_ms = 1;
  serving::Metrics metrics;
  serving::ServiceConfig c;
  c.max_batch = 3;
  serving::Service s(c, metrics);
  s.set_backend(backend);
  std::vector<Submitted> jobs;
  for (int i = 0; i < 3; i++) jobs.push_back(submit(s, bytes("prompt " + std::to_string(i)), i == 1 ? 100000 : 400));
  ASSERT_TRUE(eventually([&] { return s.running() == 3; }));
  jobs.push_back(submit(s, bytes("the fourth"), 5));
  EXPECT_EQ(s.queued(), 1u);
  EXPECT_EQ(jobs[3].sink->queued_at.load(), 1u);
  EXPECT_EQ(jobs[3].result.wait_for(50ms), std::future_status::timeout);
  // The three share steps while they decode.
  ASSERT_TRUE(eventually([&] { return histogram_count_above_one(metrics.render()) > 10; }));
  jobs[1].cancel->store(true);
  EXPECT_EQ(jobs[1].result.get().finish, serving::FinishReason::Cancelled);
  const serving::GenerationResult fourth = jobs[3].result.get();  // took the freed slot
  EXPECT_EQ(fourth.finish, serving::FinishReason::MaxTokens);
  EXPECT_EQ(jobs[3].sink->text, "01234");
  // Each session's text is the script from its start, whoever shared its steps.
  std::string script;
  while (script.size() < 400) script += "0123456789";
  for (int i : {0, 2}) {
    EXPECT_EQ(jobs[i].result.get().finish, serving::FinishReason::MaxTokens);
    EXPECT_EQ(jobs[i].sink->text, script);
  }
  const std::string m = metrics.render();
  EXPECT_NE(m.find("ds4d_step_rows_total{kind=\"decode\"}"), std::string::npos);
  EXPECT_NE(m.find("ds4d_queue_wait_seconds_count 4"), std::string::npos) << m;
  s.stop(0ms);
}

// Makes each sequence slowly and counts the calls that came while another was being made.
class SlowToMakeBackend : public ScriptedBackend {
 public:
  using ScriptedBackend::ScriptedBackend;
  std::unique_ptr<serving::EngineSequence> new_sequence() override {
    if (inside.fetch_add(1) != 0) overlapped++;
    std::this_thread::sleep_for(20ms);
    inside--;
    made++;
    return ScriptedBackend::new_sequence();
  }
  std::atomic<int> inside{0}, overlapped{0}, made{0};
};

// The slots start together, and a backend is asked for one sequence at a time: Ds4Backend hands
// its first caller the sequence made at load, and two slots asking at once could both take it
// (the daemon died of SIGSEGV on its first request in the CI's VM; docs/batching.md §slots).
TEST(BatchedService, TheSlotsAskTheBackendForTheirSequencesOneAtATime) {
  auto backend = std::make_shared<SlowToMakeBackend>("0123456789");
  backend->endless = true;
  serving::Metrics metrics;
  serving::ServiceConfig c;
  c.max_batch = 4;
  serving::Service s(c, metrics);
  s.set_backend(backend);
  std::vector<Submitted> jobs;
  for (int i = 0; i < 4; i++) jobs.push_back(submit(s, bytes("prompt " + std::to_string(i)), 20));
  for (auto& j : jobs) EXPECT_EQ(j.result.get().finish, serving::FinishReason::MaxTokens);
  EXPECT_EQ(backend->made.load(), 4);
  EXPECT_EQ(backend->overlapped.load(), 0);
  s.stop(0ms);
}

TEST(BatchedService, EachConversationContinuesInItsOwnLiveContext) {
  auto backend = std::make_shared<ScriptedBackend>("ok.");
  serving::Metrics metrics;
  serving::ServiceConfig c;
  c.max_batch = 2;
  serving::Service s(c, metrics);
  s.set_backend(backend);
  const std::string a = "conversation A, first turn about rivers", b = "conversation B, first turn on lakes";
  // Each job is submitted once the last one's slot is free again (a slot still finishing is not
  // a candidate, and the next job would take the other slot).
  auto idle = [&] { return eventually([&] { return s.running() == 0; }); };
  EXPECT_EQ(submit(s, bytes(a), 0).result.get().finish, serving::FinishReason::Eos);
  ASSERT_TRUE(idle());
  EXPECT_EQ(submit(s, bytes(b), 0).result.get().finish, serving::FinishReason::Eos);
  // Each follow-up goes to the slot holding its conversation and extends it; with one slot
  // the two would evict each other (a miss each time without a warm store).
  for (const std::string& first : {a, b}) {
    ASSERT_TRUE(idle());
    const serving::GenerationResult r = submit(s, bytes(first + "ok. and more"), 0).result.get();
    EXPECT_EQ(r.usage.cache, serving::CacheOutcome::Live) << first;
    EXPECT_EQ(r.usage.cached_tokens, first.size() + 3) << first;
  }
  s.stop(0ms);
}

TEST(BatchedService, ALongPromptIsPrefilledInSlicesBetweenARunningSessionsSteps) {
  auto backend = std::make_shared<RecordingBackend>("0123456789", 8192);
  backend->endless = true;
  backend->decode_delay_ms = 1;  // paced, so the running session does not fill its context first
  serving::Metrics metrics;
  serving::ServiceConfig c;
  c.max_batch = 2;
  c.prefill_tokens_beside_decode = 32;
  c.step_min_grace = 20ms;  // the running session comes back well within it, however loaded the machine
  serving::Service s(c, metrics);
  s.set_backend(backend);
  Submitted runner = submit(s, bytes("a running session"), 100000);
  ASSERT_TRUE(eventually([&] { return runner.sink->streamed.load() > 5; }));
  Submitted big = submit(s, std::vector<Token>(3000, 'x'), 3);
  EXPECT_EQ(big.result.get().finish, serving::FinishReason::MaxTokens);
  runner.cancel->store(true);
  runner.result.get();
  // While the prompt went in, the running session kept decoding: steps held its decode row and
  // at most 32 prompt tokens.
  size_t mixed = 0;
  for (const auto& step : backend->recorded()) {
    size_t decode = 0, prefill = 0;
    for (const auto& e : step) (e.tokens == 1 ? decode : prefill) += e.tokens;
    if (decode > 0 && prefill > 0) {
      mixed++;
      EXPECT_LE(prefill, 32u);
    }
  }
  EXPECT_GE(mixed, 3000u / 32 / 2) << "the prompt was not interleaved with the running session";
  s.stop(0ms);
}

}  // namespace
}  // namespace ds4::test
