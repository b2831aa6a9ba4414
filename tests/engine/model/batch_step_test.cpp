// BatchStep against solo contexts: random mixes of 1..8 sessions at different positions, decode
// rows beside prefill chunks and verify entries, sessions joining and leaving between steps; each
// batched session is compared with a twin context served alone (prefill / decode / verify) for
// bit-identical logits, on 1 and 2 threads. Then truncate and snapshot after a batched step, and
// the refusals, which must leave every context untouched.
#include "engine/model/batch_step.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4 {
namespace {

std::shared_ptr<Model> load(unsigned threads) {
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = threads;
  return Model::load(test::tiny_vectors_dir() / "model.gguf", o);
}

std::shared_ptr<Model> model_with(unsigned threads) {
  static auto one = load(1), two = load(2);
  return threads == 1 ? one : two;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

constexpr uint32_t kCapacity = 400;

// A session served in batches and its twin served alone with the same tokens.
struct Session {
  Context batched, solo;
  explicit Session(const std::shared_ptr<Model>& m)
      : batched(m, ContextOptions{kCapacity, 16}), solo(m, ContextOptions{kCapacity, 16}) {}
};

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n, uint32_t vocab) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % vocab);
  return t;
}

class BatchStepMixes : public ::testing::TestWithParam<unsigned> {};

TEST_P(BatchStepMixes, RandomMixesMatchSessionsServedAlone) {
  auto m = model_with(GetParam());
  const uint32_t V = m->info().n_vocab;
  std::mt19937 rng(1234 + GetParam());
  std::vector<std::unique_ptr<Session>> live;
  BatchStep step(m);
  size_t steps_with_several = 0, prefill_beside_decode = 0, verify_entries = 0, max_live = 0;
  for (int round = 0; round < 24; round++) {
    // Sessions leave (finished or cancelled) and join, some with a history served alone first,
    // so that positions differ: past the raw window, the indexer's top-k, compressed rows.
    for (size_t i = 0; i < live.size();)
      if (rng() % 6 == 0 || live[i]->solo.size() + 40 > kCapacity) live.erase(live.begin() + long(i));
      else i++;
    while (live.size() < 8 && (live.empty() || rng() % 3 == 0 || round == 8)) {  // round 8: a full batch
      auto s = std::make_unique<Session>(m);
      if (rng() % 2) {
        const auto history = random_tokens(rng, 1 + rng() % 150, V);
        s->batched.prefill(history);
        s->solo.prefill(history);
      }
      live.push_back(std::move(s));
    }
    max_live = std::max(max_live, live.size());

    // A random subset of the live sessions takes part in this step.
    std::vector<BatchEntry> entries;
    std::vector<std::vector<int32_t>> toks;
    std::vector<Session*> who;
    toks.reserve(live.size());
    for (auto& s : live) {
      if (live.size() > 1 && rng() % 4 == 0) continue;
      const uint32_t kind = s->solo.size() == 0 ? 1 : rng() % 5;  // 0..2 decode, 3 prefill, 4 verify
      const size_t n = kind <= 2 ? 1 : 2 + rng() % 24;
      toks.push_back(random_tokens(rng, n, V));
      entries.push_back(BatchEntry{&s->batched, toks.back(), kind == 4});
      who.push_back(s.get());
    }
    bool has_decode = false, has_chunk = false;
    for (const auto& e : entries) (e.tokens.size() == 1 ? has_decode : has_chunk) = true;
    steps_with_several += entries.size() > 1;
    prefill_beside_decode += has_decode && has_chunk;
    step.run(entries);

    for (size_t i = 0; i < entries.size(); i++) {
      Session& s = *who[i];
      SCOPED_TRACE("round " + std::to_string(round) + " entry " + std::to_string(i) + " of " +
                   std::to_string(entries.size()) + ", position " + std::to_string(s.solo.size()));
      if (entries[i].all_logits) {
        verify_entries++;
        const auto rows = s.solo.verify(toks[i]);
        const auto got = step.row_logits(i);
        ASSERT_EQ(got.size(), rows.size() * V);
        for (size_t k = 0; k < rows.size(); k++) ASSERT_TRUE(same_bits(got.subspan(k * V, V), rows[k])) << "row " << k;
      } else {
        if (toks[i].size() == 1) s.solo.decode(toks[i][0]);
        else s.solo.prefill(toks[i]);
        EXPECT_TRUE(step.row_logits(i).empty());
      }
      ASSERT_TRUE(same_bits(s.batched.logits(), s.solo.logits()));
      ASSERT_EQ(s.batched.tokens(), s.solo.tokens());
    }
  }
  // The walk did what it is meant to: mixes of several sessions, chunks beside decode rows.
  EXPECT_GT(steps_with_several, 12u);
  EXPECT_GT(prefill_beside_decode, 4u);
  EXPECT_GT(verify_entries, 2u);
  EXPECT_EQ(max_live, 8u);
}

INSTANTIATE_TEST_SUITE_P(Threads, BatchStepMixes, ::testing::Values(1u, 2u),
                         [](const auto& info) { return std::to_string(info.param) + "threads"; });

TEST(BatchStep, TruncateAndSnapshotAfterABatchedStepAreThoseOfSoloDecode) {
  auto m = model_with(2);
  const uint32_t V = m->info().n_vocab;
  std::mt19937 rng(99);
  std::vector<std::unique_ptr<Session>> sessions;
  for (size_t len : {5u, 40u, 130u}) {
    sessions.push_back(std::make_unique<Session>(m));
    const auto history = random_tokens(rng, len, V);
    sessions.back()->batched.prefill(history);
    sessions.back()->solo.prefill(history);
  }
  BatchStep step(m);
  // Three steps of decode rows beside a draft verify, then every session is compared.
  for (int k = 0; k < 3; k++) {
    std::vector<std::vector<int32_t>> toks;
    std::vector<BatchEntry> entries;
    toks.reserve(sessions.size());
    for (size_t i = 0; i < sessions.size(); i++) {
      toks.push_back(random_tokens(rng, i == 1 ? 5 : 1, V));
      entries.push_back(BatchEntry{&sessions[i]->batched, toks.back(), i == 1});
    }
    step.run(entries);
    for (size_t i = 0; i < sessions.size(); i++) {
      if (i == 1) sessions[i]->solo.verify(toks[i]);
      else sessions[i]->solo.decode(toks[i][0]);
    }
  }
  for (auto& s : sessions) {
    EXPECT_EQ(s->batched.snapshot(), s->solo.snapshot());
    EXPECT_EQ(s->batched.truncate_floor(), s->solo.truncate_floor());
    EXPECT_EQ(s->batched.rollback_room(), s->solo.rollback_room());
    // Take back the drafts (or decode rows), then both continue identically.
    const size_t n = s->solo.size() - 4;
    s->batched.truncate(n);
    s->solo.truncate(n);
    ASSERT_TRUE(same_bits(s->batched.logits(), s->solo.logits()));
    EXPECT_EQ(s->batched.snapshot(), s->solo.snapshot());
    const auto next = random_tokens(rng, 3, V);
    ASSERT_TRUE(same_bits(s->batched.prefill(next), s->solo.prefill(next)));
  }
  // A restored context joins a step like any other.
  Context restored(m, ContextOptions{kCapacity, 16});
  restored.restore(sessions[2]->solo.snapshot());
  const int32_t t = 7;
  step.run(std::vector<BatchEntry>{{&restored, std::span<const int32_t>(&t, 1)},
                                   {&sessions[0]->batched, std::span<const int32_t>(&t, 1)}});
  EXPECT_TRUE(same_bits(restored.logits(), sessions[2]->solo.decode(t)));
  EXPECT_TRUE(same_bits(sessions[0]->batched.logits(), sessions[0]->solo.decode(t)));
}

TEST(BatchStep, RefusalsLeaveEveryContextUntouched) {
  auto m = model_with(2);
  auto other = load(1);
  Context a(m, ContextOptions{64, 8}), b(m, ContextOptions{64, 8}), foreign(other, ContextOptions{64, 8});
  const std::vector<int32_t> hist{0, 5, 9, 12};
  a.prefill(hist);
  b.prefill(hist);
  const auto snap_a = a.snapshot(), snap_b = b.snapshot();
  const int32_t one = 3, bad = int32_t(m->info().n_vocab);
  const std::vector<int32_t> too_many(61, 1);
  const std::span<const int32_t> ok(&one, 1);
  BatchStep step(m, 8);
  const std::vector<int32_t> nine(9, 1);
  auto refused = [&](std::vector<BatchEntry> entries, auto exception_tag) {
    using E = decltype(exception_tag);
    EXPECT_THROW(step.run(entries), E);
    EXPECT_EQ(a.snapshot(), snap_a);
    EXPECT_EQ(b.snapshot(), snap_b);
  };
  refused({{&a, ok}, {nullptr, ok}}, std::invalid_argument(""));
  refused({{&a, ok}, {&b, {}}}, std::invalid_argument(""));
  refused({{&a, ok}, {&b, ok}, {&a, ok}}, std::invalid_argument(""));
  refused({{&a, ok}, {&foreign, ok}}, std::invalid_argument(""));
  refused({{&a, ok}, {&b, too_many}}, std::length_error(""));
  refused({{&a, ok}, {&b, std::span<const int32_t>(&bad, 1)}}, std::out_of_range(""));
  refused({{&a, ok}, {&b, nine}}, std::length_error(""));  // 10 rows > max_rows 8
  EXPECT_THROW(step.row_logits(0), std::out_of_range);
  // And the step still works afterwards.
  step.run(std::vector<BatchEntry>{{&a, ok}, {&b, ok}});
  EXPECT_EQ(a.size(), hist.size() + 1);
  EXPECT_TRUE(same_bits(a.logits(), b.logits()));
}

}  // namespace
}  // namespace ds4
