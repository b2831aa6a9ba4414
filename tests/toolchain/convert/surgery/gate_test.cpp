// The quality gate on ds4-tiny: a model against itself is a pass with zero delta and full
// agreement; the official-format export (converted by the gate) against its direct GGUF gives
// the same numbers on every run; the verdict classes follow the thresholds.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/surgery/quality_gate.hpp"

namespace ds4::convert::test {
namespace {

using namespace ds4::convert::surgery;

fs::path frozen_prompts() {
  static const fs::path p = [] {
    const fs::path f = scratch_dir("gate_prompts") / "frozen.jsonl";
    std::ofstream out(f);
    std::mt19937 rng(7);
    for (int i = 0; i < 3; ++i) {
      out << "{\"tokens\": [1";
      for (int t = 0; t < 24; ++t) out << ", " << 2 + rng() % 1000;
      out << "]}\n";
    }
    return f;
  }();
  return p;
}

GateOptions options(const std::string& baseline, const std::string& candidate) {
  GateOptions o;
  o.baseline = baseline, o.candidate = candidate, o.prompts = frozen_prompts().string();
  return o;
}

TEST(QualityGate, SelfIsPass) {
  GateOptions o = options(ds4_tiny_model(), ds4_tiny_model());
  o.greedy_tokens = 4;
  const GateReport r = run_gate(o);
  EXPECT_EQ(r.prompts, 3u);
  EXPECT_EQ(r.positions, 3u * 24);
  EXPECT_EQ(r.ppl_delta, 0.0);
  EXPECT_NEAR(r.mean_kl, 0.0, 1e-12);
  EXPECT_EQ(r.top1_agreement, 1.0);
  EXPECT_EQ(r.greedy_agreement, 1.0);
  EXPECT_EQ(r.verdict, "pass");
  EXPECT_GT(r.ppl_baseline, 1.0);
}

TEST(QualityGate, OfficialFolderAgainstGgufIsReproducible) {
  GateOptions o = options(direct_tiny().string(), official_tiny().string());
  o.greedy_tokens = 4;
  o.recipe = "mxfp4";
  o.work_dir = scratch_dir("gate_work").string();
  const GateReport a = run_gate(o), b = run_gate(o);
  EXPECT_GT(a.mean_kl, 0.0);  // FP8 attention and Q8_0 are lossy: the gate sees it
  EXPECT_LT(a.top1_agreement, 1.0 + 1e-12);
  EXPECT_EQ(a.ppl_candidate, b.ppl_candidate);
  EXPECT_EQ(a.mean_kl, b.mean_kl);
  EXPECT_EQ(a.top1_agreement, b.top1_agreement);
  EXPECT_EQ(a.greedy_agreement, b.greedy_agreement);
  EXPECT_EQ(a.verdict, gate_verdict(a.ppl_delta, 0.05, 0.10));
}

TEST(QualityGate, VerdictClasses) {
  EXPECT_EQ(gate_verdict(-0.02, 0.05, 0.10), "pass");
  EXPECT_EQ(gate_verdict(0.05, 0.05, 0.10), "pass");
  EXPECT_EQ(gate_verdict(0.07, 0.05, 0.10), "debt");
  EXPECT_EQ(gate_verdict(0.1000001, 0.05, 0.10), "fail");
  EXPECT_EQ(gate_verdict(0.07, 0.08, 0.10), "pass");
  GateOptions bad = options(ds4_tiny_model(), ds4_tiny_model());
  bad.pass_max = 0.2, bad.debt_max = 0.1;
  EXPECT_THROW(run_gate(bad), std::runtime_error);
}

}  // namespace
}  // namespace ds4::convert::test
