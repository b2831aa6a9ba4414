// The `auto` budget rule (engine/planner/auto_budget.hpp): the shipping model on the 128 GB box
// gets the production figures; the tiny model fits in a 2 GiB VM with the same (default) choice;
// explicit figures win and are refused when they do not fit; an explicit max_batch makes room for
// its live contexts; and over a sweep of machine sizes the auto plan fits exactly when the model
// itself fits.
#include "engine/planner/auto_budget.hpp"

#include <gtest/gtest.h>

#include "engine/planner/byte_size.hpp"
#include "engine/planner/kv_geometry.hpp"
#include "engine/planner/memory_plan.hpp"

namespace ds4::planner {
namespace {

constexpr uint64_t kMemTotal128GB = 127'600'000'000ull;  // the box's MemTotal (124609375 kB)

BudgetFacts flash_q2(uint64_t mem_total) {
  BudgetFacts f;
  f.mem_total_bytes = mem_total;
  f.weights_bytes = 86'720'111'552ull;
  f.sidecar_bytes = 6'055'903'887ull;
  f.workspace_bytes = 2 * kGiB;
  f.trained_context = 1'048'576;
  f.kv_bytes = [](uint64_t ctx) { return kv_cost(KvGeometry::ds4_flash(), ctx, 2048).total(ctx); };
  return f;
}

// The tiny agent model's terms as ds4ctl plan reports them (8 MB of weights, 260 B/token).
BudgetFacts tiny(uint64_t mem_total) {
  BudgetFacts f;
  f.mem_total_bytes = mem_total;
  f.weights_bytes = 8'077'216;
  f.workspace_bytes = 583'335'936;
  f.trained_context = 65'536;
  f.kv_bytes = [](uint64_t ctx) { return 260 * ctx + 5'409'792; };
  return f;
}

Plan plan_of(const BudgetFacts& f, const Budgets& b, uint64_t live_contexts = 1) {
  PlanInput in;
  in.live_contexts = live_contexts;
  in.weights_bytes = f.weights_bytes;
  in.sidecar_bytes = f.sidecar_bytes;
  in.workspace_bytes = f.workspace_bytes;
  in.context_tokens = b.context_tokens;
  in.kv_fixed_bytes = f.kv_bytes(b.context_tokens);  // the whole KV as one term is enough here
  in.hot_cache_bytes = b.hot_cache_bytes;
  in.reserve_bytes = b.reserve_bytes;
  in.floor_bytes = b.floor_bytes;
  in.mem_total_bytes = f.mem_total_bytes;
  return compute_plan(in);
}

TEST(AutoBudget, ShippingModelOnTheBoxGetsTheProductionFigures) {
  const BudgetFacts f = flash_q2(kMemTotal128GB);
  const Budgets b = resolve_budgets(f, {});
  EXPECT_EQ(b.context_tokens, 262'144u);
  EXPECT_EQ(b.hot_cache_bytes, 12 * kGiB);
  EXPECT_EQ(b.reserve_bytes, 4 * kGiB);
  EXPECT_EQ(b.floor_bytes, 4 * kGiB);
  EXPECT_EQ(b.swap_bytes, 16 * kGiB);
  EXPECT_EQ(b.auto_terms, unsigned{kAutoContext | kAutoHotCache | kAutoReserve | kAutoFloor | kAutoSwap});
  EXPECT_EQ(plan_of(f, b).verdict, Verdict::Fits);
}

TEST(AutoBudget, TinyModelFitsATwoGiBVm) {
  const BudgetFacts f = tiny(2 * kGiB);
  const Budgets b = resolve_budgets(f, {});
  EXPECT_EQ(b.context_tokens, 65'536u);  // the trained length: its KV is 22 MB
  EXPECT_EQ(b.reserve_bytes, kAutoReserveMin);
  EXPECT_EQ(b.floor_bytes, kAutoFloorMin);
  EXPECT_EQ(b.swap_bytes, 292 * kMiB);  // 16 GiB × 2/112 = 292.57 MiB, in whole MiB
  EXPECT_EQ(b.swap_bytes % kMiB, 0u);
  EXPECT_GT(b.hot_cache_bytes, 0u);
  EXPECT_LT(b.hot_cache_bytes, 1 * kGiB);
  EXPECT_EQ(plan_of(f, b).verdict, Verdict::Fits);
}

TEST(AutoBudget, ExplicitFiguresWinAndStillRefuse) {
  const BudgetFacts f = flash_q2(kMemTotal128GB);
  BudgetChoice c;
  c.hot_cache_bytes = 20 * kGiB;
  c.context_tokens = 262'144;
  const Budgets b = resolve_budgets(f, c);
  EXPECT_EQ(b.hot_cache_bytes, 20 * kGiB);
  EXPECT_EQ(b.context_tokens, 262'144u);
  EXPECT_EQ(b.auto_terms & (kAutoHotCache | kAutoContext), 0u);
  EXPECT_EQ(plan_of(f, b).verdict, Verdict::BelowFloor);  // the table's "hot_cache_20GiB_below_floor"

  // An explicit hot cache leaves the context to auto, which shrinks it to fit beside it.
  c.context_tokens.reset();
  const Budgets shrunk = resolve_budgets(f, c);
  EXPECT_LT(shrunk.context_tokens, 262'144u);
  EXPECT_GE(shrunk.context_tokens, kAutoContextMin);
  EXPECT_EQ(plan_of(f, shrunk).verdict, Verdict::Fits);

  // Context 0 is the trained length, not auto.
  BudgetChoice trained;
  trained.context_tokens = 0;
  EXPECT_EQ(resolve_budgets(f, trained).context_tokens, 1'048'576u);
}

TEST(AutoBudget, ShrinksTheContextOnASmallerBox) {
  // 100 GiB: the weights leave about 8 GiB, so 262144 tokens (3.6 GiB) is more than half of it.
  const BudgetFacts f = flash_q2(100 * kGiB);
  const Budgets b = resolve_budgets(f, {});
  EXPECT_EQ(b.context_tokens, 131'072u);
  EXPECT_EQ(plan_of(f, b).verdict, Verdict::Fits);
}

// An explicit max_batch: the auto context and hot cache make room for that many KVs, so on the
// box 8 live contexts get 65536 tokens each (8 × 1.04 GiB within half of what the weights leave).
TEST(AutoBudget, AnExplicitMaxBatchSizesTheContextForEveryLiveContext) {
  const BudgetFacts f = flash_q2(kMemTotal128GB);
  BudgetChoice c;
  c.max_batch = 8;
  const Budgets b = resolve_budgets(f, c);
  EXPECT_EQ(b.context_tokens, 65'536u);
  EXPECT_LT(b.hot_cache_bytes, 12 * kGiB);
  EXPECT_EQ(plan_of(f, b, 8).verdict, Verdict::Fits);
  EXPECT_EQ(plan_of(f, resolve_budgets(f, {}), 8).verdict, Verdict::DoesNotFit);  // sized for one

  // With the context explicit only the hot cache moves, and 8 full contexts do not fit.
  c.context_tokens = 262'144;
  const Budgets fixed = resolve_budgets(f, c);
  EXPECT_EQ(fixed.context_tokens, 262'144u);
  EXPECT_NE(plan_of(f, fixed, 8).verdict, Verdict::Fits);
}

// Does the model fit at all: fixed terms + `live` KVs at the smallest auto context within
// MemTotal less the scaled reserve and floor.
bool model_fits(const BudgetFacts& f, const Budgets& b, uint64_t live = 1) {
  const uint64_t least = std::min(auto_context_cap(f.trained_context), kAutoContextMin);
  const uint64_t need = f.weights_bytes + f.sidecar_bytes + f.workspace_bytes + live * f.kv_bytes(least) +
                        b.reserve_bytes + b.floor_bytes;
  return need <= f.mem_total_bytes;
}

TEST(AutoBudget, FitsWheneverTheModelFits) {
  int fitting_models = 0;
  for (uint64_t mib = 256; mib <= 512 * 1024; mib += mib / 8) {
    for (const BudgetFacts& f : {tiny(mib * kMiB), flash_q2(mib * kMiB)}) {
      const Budgets b = resolve_budgets(f, {});
      const Plan p = plan_of(f, b);
      if (model_fits(f, b)) {
        ++fitting_models;
        EXPECT_EQ(p.verdict, Verdict::Fits) << mib << " MiB, weights " << f.weights_bytes << ":\n" << render_report(p);
      } else {
        EXPECT_NE(p.verdict, Verdict::Fits) << mib << " MiB";
      }
      BudgetChoice four;  // an explicit max_batch 4 holds to the same line with 4 KVs
      four.max_batch = 4;
      const Budgets b4 = resolve_budgets(f, four);
      EXPECT_EQ(plan_of(f, b4, 4).verdict == Verdict::Fits, model_fits(f, b4, 4)) << mib << " MiB, max_batch 4";
    }
  }
  EXPECT_GT(fitting_models, 40);  // the sweep covers both sides of the line for both models
}

}  // namespace
}  // namespace ds4::planner
