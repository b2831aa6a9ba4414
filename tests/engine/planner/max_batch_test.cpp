// server.max_batch in the plan (engine/planner/max_batch.hpp): `auto` takes the largest count of
// live contexts that still fits, up to its cap, and never less than 1; an explicit count is used
// as given. Figures: DS4 Flash q2 on the 128 GB box (memory_plan_test.cpp), where each context
// at 262144 tokens holds 3,822,396,416 B of KV and one context leaves 7,379,268,017 B above the
// 4 GiB floor: room for one more.
#include "engine/planner/max_batch.hpp"

#include <gtest/gtest.h>

#include "engine/planner/auto_budget.hpp"
#include "engine/planner/byte_size.hpp"

namespace ds4::planner {
namespace {

PlanInput flash_q2_on_the_box() {
  PlanInput in;
  in.weights_bytes = 86'720'111'552ull;
  in.sidecar_bytes = 6'055'903'887ull;
  in.hot_cache_bytes = 12 * kGiB;
  in.context_tokens = 262'144;
  in.kv_bytes_per_token = 13'760;
  in.kv_fixed_bytes = 215'294'976ull;
  in.workspace_bytes = 2 * kGiB;
  in.reserve_bytes = 4 * kGiB;
  in.mem_total_bytes = 127'600'000'000ull;
  in.floor_bytes = 4 * kGiB;
  return in;
}

TEST(MaxBatch, AutoPicksTheLargestCountThatFits) {
  EXPECT_EQ(choose_max_batch(flash_q2_on_the_box()), 2u);
  PlanInput smaller = flash_q2_on_the_box();
  smaller.context_tokens = 131'072;  // 2,018,845,696 B each: 5 fit above the floor
  EXPECT_EQ(choose_max_batch(smaller), 5u);
  PlanInput exact = flash_q2_on_the_box();  // the floor exactly at the headroom of 2 contexts
  exact.floor_bytes = 7'851'838'897ull;
  EXPECT_EQ(choose_max_batch(exact), 2u);
  exact.floor_bytes += 1;
  EXPECT_EQ(choose_max_batch(exact), 1u);
}

TEST(MaxBatch, AutoStopsAtItsCap) {
  PlanInput roomy = flash_q2_on_the_box();
  roomy.mem_total_bytes = 512 * kGiB;
  EXPECT_EQ(choose_max_batch(roomy), kAutoMaxBatchCap);
  EXPECT_EQ(kAutoMaxBatchCap, 8u);
  EXPECT_EQ(choose_max_batch(roomy, 3), 3u);
}

TEST(MaxBatch, AutoFallsToOneWhenEvenOneDoesNotFit) {
  PlanInput tight = flash_q2_on_the_box();
  tight.hot_cache_bytes = 20 * kGiB;  // below the floor with one context
  EXPECT_EQ(choose_max_batch(tight), 1u);
  tight.mem_total_bytes = 64 * kGiB;  // does not fit at all
  EXPECT_EQ(choose_max_batch(tight), 1u);
}

TEST(MaxBatch, ResolvesAnExplicitCountAsGivenAndMarksAuto) {
  PlanInput in = flash_q2_on_the_box();
  resolve_live_contexts(in, 5);
  EXPECT_EQ(in.live_contexts, 5u);  // as given, although it does not fit: the verdict says so
  EXPECT_EQ(in.auto_terms & kAutoMaxBatch, 0u);
  EXPECT_EQ(compute_plan(in).verdict, Verdict::DoesNotFit);
  resolve_live_contexts(in, std::nullopt);
  EXPECT_EQ(in.live_contexts, 2u);
  EXPECT_NE(in.auto_terms & kAutoMaxBatch, 0u);
  EXPECT_NE(render_report(compute_plan(in)).find("2 live contexts (auto) ×"), std::string::npos);
}

}  // namespace
}  // namespace ds4::planner
