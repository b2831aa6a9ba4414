// The planner read from a real GGUF: the tiny DS4-layout model (6 layers, ratios 0,0,4,128,4,128)
// must give the same per-layer geometry the architecture describes, found from metadata and the
// compressor tensor shapes rather than assumed.
#include "engine/planner/plan_from_gguf.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/planner/byte_size.hpp"
#include "engine/planner/max_batch.hpp"
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::planner {
namespace {

std::string tiny_model() {
  if (const char* v = std::getenv("DS4D_DS4_VECTORS")) return std::string(v) + "/model.gguf";
  return std::string(DS4D_SHARED_DIR) + "/vectors/ds4-tiny/model.gguf";
}

TEST(PlanFromGguf, TinyModelGeometry) {
  const auto f = gguf::GgufFile::open(tiny_model());
  const ModelFacts m = read_model_facts(f);
  ASSERT_EQ(m.kv.layers.size(), 6u);
  const uint32_t ratios[] = {0, 0, 4, 128, 4, 128};
  const uint32_t overlaps[] = {1, 1, 2, 1, 2, 1};
  const bool indexers[] = {false, false, true, false, true, false};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(m.kv.layers[i].ratio, ratios[i]) << i;
    EXPECT_EQ(m.kv.layers[i].overlap, overlaps[i]) << i;
    EXPECT_EQ(m.kv.layers[i].indexer, indexers[i]) << i;
  }
  EXPECT_EQ(m.kv.latent_dim, 512u);
  EXPECT_EQ(m.kv.indexer_dim, 128u);
  EXPECT_EQ(m.kv.window, 128u);
  EXPECT_EQ(m.trained_context, 1'048'576u);
  EXPECT_EQ(m.dims.embedding, 256u);
  EXPECT_EQ(m.dims.vocab, 1024u);
  EXPECT_EQ(m.file_bytes, std::filesystem::file_size(tiny_model()));
}

TEST(PlanFromGguf, TinyModelPlanInput) {
  GgufPlanRequest r;
  r.model_path = tiny_model();
  r.budgets.context_tokens = 4096;
  r.budgets.hot_cache_bytes = 1 * kGiB;
  r.budgets.reserve_bytes = 1 * kGiB;
  r.budgets.floor_bytes = 1 * kGiB;
  r.budgets.max_batch = 3;
  r.mem_total_bytes = 8 * kGiB;
  const PlanInput in = plan_input_from_gguf(r);
  EXPECT_EQ(in.live_contexts, 3u);
  EXPECT_EQ(in.auto_terms & kAutoMaxBatch, 0u);
  EXPECT_EQ(in.weights_bytes, std::filesystem::file_size(tiny_model()));
  EXPECT_EQ(in.kv_bytes_per_token, 2u * 640 + 2u * 16);
  // rings: 6 layers × 2304 rows × 2 KiB; states 2 × 80 KiB + 2 × 512 KiB; spares 4 × 2 KiB rows
  // and 2 × 2 indexer rows of 512 B.
  EXPECT_EQ(in.kv_fixed_bytes, 6ull * 2304 * 2048 + 2 * 81920 + 2 * 524288 + 4 * 2 * 2048 + 2 * 2 * 512);
  EXPECT_EQ(compute_plan(in).verdict, Verdict::Fits);
}

// A drafter adds its step's scratch and graphs to the workspace (docs/memory.md §scratch), and
// its block's KV to the fixed KV: the embedded agent model with its MTP sidecar.
TEST(PlanFromGguf, ADrafterAddsItsStepScratchToTheWorkspace) {
  GgufPlanRequest r;
  r.model_path = DS4D_AGENT_MODEL;
  r.budgets.context_tokens = 4096;
  r.mem_total_bytes = 8 * kGiB;
  const PlanInput alone = plan_input_from_gguf(r);
  r.drafter_path = DS4D_AGENT_MTP;
  const PlanInput drafting = plan_input_from_gguf(r);
  const ModelFacts m = read_model_facts(gguf::GgufFile::open(DS4D_AGENT_MODEL));
  EXPECT_EQ(drafting.workspace_bytes - alone.workspace_bytes, drafter_workspace(m.dims));
  EXPECT_EQ(drafting.drafter_workspace_bytes, drafter_workspace(m.dims));
  EXPECT_EQ(alone.drafter_workspace_bytes, 0u);
  // The report says how much of the workspace is the drafter's.
  const std::string report = render_report(compute_plan(drafting));
  EXPECT_NE(report.find("\n    (of which the MTP drafter's step: 0.02 GiB, 19,810,872 B)\n  reserve"),
            std::string::npos)
      << report;
  EXPECT_EQ(render_report(compute_plan(alone)).find("drafter"), std::string::npos);
  EXPECT_GT(drafter_workspace(m.dims), kDrafterPassRows * activation_bytes_per_token(m.dims));
  EXPECT_GT(drafting.kv_fixed_bytes, alone.kv_fixed_bytes);
  EXPECT_EQ(drafting.sidecar_bytes, std::filesystem::file_size(DS4D_AGENT_MTP));
  // An operator's workspace figure is taken as given.
  r.workspace_bytes = 3 * kGiB;
  EXPECT_EQ(plan_input_from_gguf(r).workspace_bytes, 3 * kGiB);
  EXPECT_EQ(plan_input_from_gguf(r).drafter_workspace_bytes, 0u);
}

TEST(PlanFromGguf, ContextZeroIsTheTrainedContext) {
  GgufPlanRequest r;
  r.model_path = tiny_model();
  r.workspace_bytes = 0;
  r.budgets.context_tokens = 0;
  EXPECT_EQ(plan_input_from_gguf(r).context_tokens, 1'048'576u);
}

TEST(PlanFromGguf, AutoContextIsTheTrainedContextCappedWhenItFits) {
  GgufPlanRequest r;
  r.model_path = tiny_model();
  r.mem_total_bytes = 64 * kGiB;
  const PlanInput in = plan_input_from_gguf(r);
  EXPECT_EQ(in.context_tokens, kAutoContextCap);  // trained 1M, capped at 262144
  EXPECT_EQ(in.auto_terms,
            unsigned{kAutoContext | kAutoHotCache | kAutoReserve | kAutoFloor | kAutoSwap | kAutoMaxBatch});
  EXPECT_EQ(in.live_contexts, kAutoMaxBatchCap);  // 64 GiB hold 8 of its 0.33 GiB contexts easily
  EXPECT_EQ(compute_plan(in).verdict, Verdict::Fits);
}

TEST(PlanFromGguf, MissingFileIsAnError) {
  GgufPlanRequest r;
  r.model_path = "/nonexistent/model.gguf";
  EXPECT_THROW(plan_input_from_gguf(r), gguf::GgufError);
}

}  // namespace
}  // namespace ds4::planner
