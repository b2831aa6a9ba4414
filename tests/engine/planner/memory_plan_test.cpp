// Table-driven checks of the capacity plan with the real DS4 Flash q2 figures: the 86,720,111,552
// byte target, a 5.64 GiB sidecar, a 12 GiB hot cache, 262144 tokens of context, MemTotal of
// 127.6 GB and a 4 GiB floor. Expected totals were worked out by hand from docs/memory.md §the-plan
// (13,760 B/token; rings 43 × 2304 rows × 2 KiB; compressor states 21 × 80 KiB + 20 × 512 KiB;
// two spare rows per compressed buffer) and are typed in as literals.
#include "engine/planner/memory_plan.hpp"

#include <gtest/gtest.h>

#include "engine/planner/byte_size.hpp"
#include "engine/planner/kv_geometry.hpp"

namespace ds4::planner {
namespace {

constexpr uint64_t kTarget = 86'720'111'552ull;
constexpr uint64_t kSidecar = 6'055'903'887ull;     // 5.64 GiB
constexpr uint64_t kMemTotal = 127'600'000'000ull;  // 127.6 GB (MemTotal: 124609375 kB)
constexpr uint64_t kFixedKv = 215'294'976ull;

PlanInput flash_q2(uint64_t context, uint64_t hot_cache) {
  PlanInput in;
  in.model_name = "DeepSeek V4 Flash q2";
  in.weights_bytes = kTarget;
  in.sidecar_bytes = kSidecar;
  in.hot_cache_bytes = hot_cache;
  in.context_tokens = context;
  in.kv_bytes_per_token = 13'760;
  in.kv_fixed_bytes = kFixedKv;
  in.workspace_bytes = 2 * kGiB;
  in.reserve_bytes = 4 * kGiB;
  in.mem_total_bytes = kMemTotal;
  in.floor_bytes = 4 * kGiB;
  return in;
}

TEST(KvCost, Ds4FlashMatchesArchitectureNumbers) {
  const KvCost c = kv_cost(KvGeometry::ds4_flash(), 262'144, 2048);
  EXPECT_EQ(c.raw_cap, 2304u);
  EXPECT_EQ(c.bytes_per_token, 13'760u);
  EXPECT_EQ(c.raw_ring_bytes, 202'899'456u);  // 193.5 MiB
  EXPECT_EQ(c.state_bytes, 12'206'080u);      // 11.6 MiB
  EXPECT_EQ(c.spare_row_bytes, 189'440u);
  EXPECT_EQ(c.fixed_bytes(), kFixedKv);
  EXPECT_EQ(c.total(262'144), 3'822'396'416u);
}

TEST(KvCost, RawRingRule) {
  EXPECT_EQ(raw_ring_rows(128, 2048, 1 << 20), 2304u);
  EXPECT_EQ(raw_ring_rows(128, 2048, 1000), 1024u);  // context-limited, aligned up
  EXPECT_EQ(raw_ring_rows(128, 65536, 1 << 20), 8192u);
  EXPECT_EQ(raw_ring_rows(128, 0, 64), 256u);
}

TEST(KvCost, DrafterAddsARing) {
  KvGeometry g = KvGeometry::ds4_flash();
  const uint64_t base = kv_cost(g, 4096, 2048).raw_ring_bytes;
  g.drafter_layers = 1;
  EXPECT_EQ(kv_cost(g, 4096, 2048).raw_ring_bytes - base, 2304u * 2048u);
}

// The target keeps the final HC states the block reads: (window + 64) rows of n_hc x n_embd
// floats, 12 MiB on DS4 Flash.
TEST(KvCost, DrafterStatesAreCounted) {
  KvGeometry g = KvGeometry::ds4_flash();
  g.drafter_layers = 1;
  const uint64_t ring = kv_cost(g, 4096, 2048).raw_ring_bytes;
  g.drafter_state_row = 4ull * 4096 * 4;
  EXPECT_EQ(kv_cost(g, 4096, 2048).raw_ring_bytes - ring, (128u + 64u) * 65536u);
}

struct PlanCase {
  const char* name;
  uint64_t context;
  uint64_t hot_cache;
  uint64_t floor;
  uint64_t expect_total;
  int64_t expect_headroom;
  Verdict expect_verdict;
  int expect_exit;
};

class PlanTable : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanTable, ComputesTotalHeadroomAndVerdict) {
  const PlanCase& c = GetParam();
  PlanInput in = flash_q2(c.context, c.hot_cache);
  in.floor_bytes = c.floor;
  const Plan p = compute_plan(in);
  EXPECT_EQ(p.total_bytes, c.expect_total);
  EXPECT_EQ(p.headroom_bytes, c.expect_headroom);
  EXPECT_EQ(p.verdict, c.expect_verdict);
  EXPECT_EQ(exit_code(p.verdict), c.expect_exit);
}

INSTANTIATE_TEST_SUITE_P(
    Ds4FlashQ2, PlanTable,
    ::testing::Values(PlanCase{"shipping_config_fits", 262'144, 12 * kGiB, 4 * kGiB, 115'925'764'687ull,
                               11'674'235'313ll, Verdict::Fits, 0},
                      PlanCase{"hot_cache_20GiB_below_floor", 262'144, 20 * kGiB, 4 * kGiB, 124'515'699'279ull,
                               3'084'300'721ll, Verdict::BelowFloor, 3},
                      PlanCase{"one_million_tokens_does_not_fit", 1'048'576, 20 * kGiB, 4 * kGiB, 135'337'003'599ull,
                               -7'737'003'599ll, Verdict::DoesNotFit, 4},
                      PlanCase{"floor_equal_to_headroom_fits", 262'144, 12 * kGiB, 11'674'235'313ull,
                               115'925'764'687ull, 11'674'235'313ll, Verdict::Fits, 0},
                      PlanCase{"floor_one_byte_above_headroom", 262'144, 12 * kGiB, 11'674'235'314ull,
                               115'925'764'687ull, 11'674'235'313ll, Verdict::BelowFloor, 3}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PlanReport, PrintsEveryTermInGiBAndBytes) {
  const std::string r = render_report(compute_plan(flash_q2(262'144, 12 * kGiB)));
  EXPECT_NE(r.find("86,720,111,552 B"), std::string::npos) << r;
  EXPECT_NE(r.find("80.76 GiB"), std::string::npos) << r;
  EXPECT_NE(r.find("5.64 GiB"), std::string::npos) << r;
  EXPECT_NE(r.find("12.00 GiB"), std::string::npos) << r;
  EXPECT_NE(r.find("13,760 B/token"), std::string::npos) << r;
  EXPECT_NE(r.find("115,925,764,687 B"), std::string::npos) << r;
  EXPECT_NE(r.find("127,600,000,000 B"), std::string::npos) << r;
  EXPECT_NE(r.find("11,674,235,313 B"), std::string::npos) << r;
  EXPECT_NE(r.find("verdict: fits"), std::string::npos) << r;
}

TEST(PlanReport, NegativeHeadroomIsSigned) {
  const std::string r = render_report(compute_plan(flash_q2(1'048'576, 20 * kGiB)));
  EXPECT_NE(r.find("-7,737,003,599 B"), std::string::npos) << r;
  EXPECT_NE(r.find("verdict: does not fit"), std::string::npos) << r;
}

// Each live context (server.max_batch) holds its own KV: 3,822,396,416 B at 262144 tokens.
TEST(LiveContexts, KvScalesWithTheLiveContexts) {
  PlanInput in = flash_q2(262'144, 12 * kGiB);
  in.live_contexts = 2;
  const Plan two = compute_plan(in);
  EXPECT_EQ(two.kv_bytes_per_context, 3'822'396'416u);
  EXPECT_EQ(two.kv_bytes, 2 * 3'822'396'416ull);
  EXPECT_EQ(two.total_bytes, 115'925'764'687ull + 3'822'396'416ull);
  EXPECT_EQ(two.headroom_bytes, 7'851'838'897ll);
  EXPECT_EQ(two.verdict, Verdict::Fits);
  const std::string r = render_report(two);
  EXPECT_NE(r.find("(2 live contexts × 3.56 GiB: 13,760 B/token × 262144 tokens"), std::string::npos) << r;
  in.live_contexts = 3;  // 4,029,442,481 B of headroom: under the 4 GiB floor
  EXPECT_EQ(compute_plan(in).verdict, Verdict::BelowFloor);
  EXPECT_NE(render_report(compute_plan(in)).find("live contexts (max batch)"), std::string::npos);
  in.live_contexts = 0;
  EXPECT_THROW(compute_plan(in), std::invalid_argument);
}

TEST(PlanInputChecks, OverflowIsAnError) {
  PlanInput in = flash_q2(262'144, 12 * kGiB);
  in.kv_bytes_per_token = UINT64_MAX / 2;
  EXPECT_THROW(compute_plan(in), std::overflow_error);
}

TEST(ByteSize, ParsesBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_byte_size("12GiB"), 12 * kGiB);
  EXPECT_EQ(parse_byte_size("12 G"), 12 * kGiB);
  EXPECT_EQ(parse_byte_size("5.64GiB"), kSidecar);
  EXPECT_EQ(parse_byte_size("127.6GB"), kMemTotal);
  EXPECT_EQ(parse_byte_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_byte_size("86720111552"), kTarget);
  EXPECT_EQ(parse_byte_size("4k"), 4096u);
  EXPECT_THROW(parse_byte_size("twelve"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size("12 parsecs"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size("1.2.3G"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size(""), std::invalid_argument);
}

TEST(ByteSize, Formats) {
  EXPECT_EQ(format_bytes_exact(86'720'111'552ull), "86,720,111,552");
  EXPECT_EQ(format_bytes_exact(999), "999");
  EXPECT_EQ(format_bytes_exact(1000), "1,000");
  EXPECT_EQ(format_gib(12 * kGiB), "12.00 GiB");
}

}  // namespace
}  // namespace ds4::planner
