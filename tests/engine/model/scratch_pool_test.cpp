// The forward's scratch is the model's, lent per pass (engine/model/scratch_pool.hpp): the pool
// itself (a scratch per pass running at once, reused afterwards), and on the CPU a prefill's
// scratch within the plan's workspace term and the contexts after the first growing only their
// own state on the heap, so that one term holds however many contexts are live; the same for the
// MTP drafters' steps (docs/memory.md §scratch). The device's twin is device_scratch_gpu_test.cpp.
#include "engine/model/scratch_pool.hpp"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "engine/model/model_impl.hpp"
#include "engine/model/mtp_impl.hpp"
#include "engine/planner/plan_from_gguf.hpp"
#include "tests/engine/model/mtp_sidecar.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4 {
namespace {

TEST(ScratchPool, MakesOnePerPassRunningAtOnceAndReusesThem) {
  int made = 0;
  model::ScratchPool<std::vector<int>> pool([&made] {
    made++;
    return std::make_unique<std::vector<int>>();
  });
  const std::vector<int>* first = nullptr;
  {
    auto a = pool.take();
    a->resize(100);
    first = &*a;
    auto b = pool.take();  // a is lent: a second one
    EXPECT_NE(&*b, first);
  }
  EXPECT_EQ(made, 2);
  for (int i = 0; i < 5; i++) {
    auto c = pool.take();  // passes one after another: no new scratch
    EXPECT_EQ(made, 2);
  }
  EXPECT_EQ(pool.made(), 2u);
  // Grown scratch is kept: the last one given back (a) comes out next, still 100 long.
  auto again = pool.take();
  EXPECT_EQ(&*again, first);
  EXPECT_EQ(again->size(), 100u);
}

TEST(ScratchPool, AFailedMakeLeavesThePoolAsItWas) {
  model::ScratchPool<int> pool([]() -> std::unique_ptr<int> { throw std::runtime_error("out of memory"); });
  EXPECT_THROW(pool.take(), std::runtime_error);
  EXPECT_EQ(pool.made(), 0u);
}

size_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::vector<int32_t> prompt(int32_t first) {
  std::vector<int32_t> t(96);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// What a prefill adds to the heap beyond the context's own state (Context::cache_bytes()).
int64_t beyond_state(Context& c, const std::vector<int32_t>& tokens) {
  const size_t heap = heap_in_use(), state = c.cache_bytes();
  c.prefill(tokens);
  return int64_t(heap_in_use() - heap) - int64_t(c.cache_bytes() - state);
}

TEST(ScratchPool, CpuContextsAfterTheFirstGrowOnlyTheirState) {
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = 1;
  const std::shared_ptr<Model> m = Model::load(test::tiny_vectors_dir() / "model.gguf", o);
  ContextOptions co;
  co.context_length = 160;
  Context a(m, co);
  const int64_t first = beyond_state(a, prompt(1));  // the scratch, grown for 96 rows
  ASSERT_GT(first, 64 * 1024);
  // Within the plan's workspace term for that many rows (less its CUDA context and graphs).
  const planner::ModelFacts facts = planner::read_model_facts(m->gguf());
  const int64_t planned = int64_t(planner::workspace_estimate(facts.dims, 96) - planner::kCudaContextBytes -
                                  planner::graph_bytes(facts.dims));
  EXPECT_LE(first, planned);
  std::cout << "CPU scratch of a 96-token prefill: " << first << " B, planned " << planned << " B\n";
  for (int32_t i = 0; i < 3; i++) {
    Context c(m, co);
    const int64_t next = beyond_state(c, prompt(10 + i));
    EXPECT_LT(next, first / 4) << "context " << i + 1 << " grew " << next << " B beyond its state, the first " << first
                               << " B: a scratch of its own";
  }
  EXPECT_EQ(m->impl().cpu_scratch.made(), 1u);
}

// Sequences with a drafter each: the first draft grows the model's draft scratch, within the
// plan's drafter term; the others' drafts grow only their own state (the drafts' logits and the
// tokens they were computed from). Each drafter held its own scratch before: the same catch-up
// again, on DS4 Flash about 199 MiB per sequence outside the plan.
TEST(ScratchPool, CpuDraftersAfterTheFirstGrowOnlyTheirState) {
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = 1;
  const std::filesystem::path tiny = test::tiny_vectors_dir() / "model.gguf";
  const std::shared_ptr<Model> m = Model::load(tiny, o);
  const std::filesystem::path sidecar =
      std::filesystem::temp_directory_path() / ("ds4d-draft-scratch-" + std::to_string(::getpid()) + ".gguf");
  test::write_sidecar(sidecar);
  const std::shared_ptr<const MtpModel> mtp = MtpModel::load(sidecar, m, tiny);
  std::filesystem::remove(sidecar);
  ContextOptions co;
  co.context_length = 160;
  co.keep_hidden = mtp->hidden_reach();
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<MtpDrafter> drafters;
  for (int32_t i = 0; i < 4; i++) {
    contexts.push_back(std::make_unique<Context>(m, co));
    contexts.back()->prefill(prompt(1 + 7 * i));  // the first draft catches up on the block's reach
    drafters.emplace_back(mtp);
  }
  // What a drafter's first draft adds to the heap beyond its own state: its logits and the
  // target's tokens it keeps (a vector may hold twice what it was grown to).
  const int64_t own = int64_t(m->info().n_vocab) * 4 + 2 * int64_t(contexts[0]->size() + 1) * 4;
  const auto grown = [&](size_t i) {
    const size_t heap = heap_in_use();
    EXPECT_EQ(drafters[i].draft(*contexts[i], 3, 3).size(), 3u);
    return int64_t(heap_in_use() - heap) - own;
  };
  const int64_t first = grown(0);
  ASSERT_GT(first, 64 * 1024);
  const planner::ModelFacts facts = planner::read_model_facts(m->gguf());
  const int64_t planned = int64_t(planner::drafter_workspace(facts.dims));
  EXPECT_LE(first, planned);
  std::cout << "CPU scratch of a drafter's catch-up: " << first << " B, planned " << planned << " B\n";
  for (size_t i = 1; i < drafters.size(); i++) {
    const int64_t next = grown(i);
    EXPECT_LT(next, first / 4) << "drafter " << i << " grew " << next << " B beyond its state, the first " << first
                               << " B: a scratch of its own";
  }
  EXPECT_EQ(mtp->impl().draft_scratch.made(), 1u);
}

}  // namespace
}  // namespace ds4
