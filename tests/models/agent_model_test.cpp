// The embedded default model (models/ds4-tiny-agent.gguf, trained by tools/tinyagent):
//  * parity: this engine against the PyTorch reference's logits on the same dequantized weights
//    with the engine's activation formats simulated (models/ds4-tiny-agent.parity.bin, written
//    by tools/tinyagent/parity.py in the ds4-tiny cases.bin format), on every prompt and every
//    teacher-forced decode step, by the statistical rules of ds4-tiny's README; and identical
//    greedy continuations up to the first step whose reference margin is below 0.5;
//  * quality: greedy replies on 20 held-out prompts (models/ds4-tiny-agent.eval20.jsonl) hold the
//    rates the manifest reports, seen and held-out tool schemas alike (bounds in models/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ds4ctl/eval_agent/agent_eval.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace {

struct Stats {
  double pearson, rms_ratio, max_ratio;
};

Stats compare(std::span<const float> ref, std::span<const float> got) {
  const size_t n = ref.size();
  double mr = 0, mg = 0, maxabs = 0;
  for (size_t i = 0; i < n; ++i) mr += ref[i], mg += got[i], maxabs = std::max(maxabs, std::fabs(double(ref[i])));
  mr /= n, mg /= n;
  double sxx = 0, syy = 0, sxy = 0, sdd = 0, maxd = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = ref[i] - mr, y = got[i] - mg, d = double(got[i]) - ref[i];
    sxx += x * x, syy += y * y, sxy += x * y, sdd += d * d;
    maxd = std::max(maxd, std::fabs(d));
  }
  return {sxy / std::sqrt(sxx * syy), std::sqrt(sdd / n) / std::sqrt(sxx / n), maxd / maxabs};
}

size_t argmax(std::span<const float> v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

double margin(std::span<const float> v) {
  std::vector<float> s(v.begin(), v.end());
  std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<>());
  return s[0] - s[1];
}

std::shared_ptr<ds4::Model> load_model() {
  ds4::LoadOptions lo;
  lo.threads = 2;
  return ds4::Model::load(DS4D_AGENT_MODEL, lo);
}

void check_step(std::span<const float> ref, std::span<const float> got, const std::string& what) {
  const Stats s = compare(ref, got);
  EXPECT_GE(s.pearson, 0.98) << what;
  EXPECT_LE(s.rms_ratio, 0.2) << what;
  EXPECT_LE(s.max_ratio, 0.25) << what;
  if (margin(ref) > 1.0) {
    EXPECT_EQ(argmax(ref), argmax(got)) << what << ": argmax differs at margin " << margin(ref);
  }
  std::printf("[ parity   ] %s: Pearson %.5f, rms/std %.4f, max|d|/max|logit| %.4f\n", what.c_str(), s.pearson,
              s.rms_ratio, s.max_ratio);
}

TEST(AgentModel, ParityWithPyTorchReference) {
  const auto model = load_model();
  const ds4::test::TinyCases tc = ds4::test::load_tiny_cases(DS4D_AGENT_DATA "/ds4-tiny-agent.parity.bin");
  ASSERT_EQ(tc.n_vocab, model->info().n_vocab);
  ASSERT_GE(tc.cases.size(), 1u);
  for (const auto& k : tc.cases) {
    ds4::Context ctx(model, ds4::ContextOptions{uint32_t(k.prompt.size() + k.gen.size() + 8)});
    std::span<const float> got = ctx.prefill(k.prompt);
    check_step(k.logits, got, k.name + " prompt");
    bool greedy_same = true;  // until the first low-margin step
    std::span<const float> ref = k.logits;
    for (size_t g = 0; g < k.gen.size(); ++g) {
      if (margin(ref) < 0.5) greedy_same = false;
      if (greedy_same) {
        EXPECT_EQ(argmax(got), size_t(k.gen[g])) << k.name << ": greedy step " << g;
      }
      got = ctx.decode(k.gen[g]);
      ref = k.gen_logits[g];
      check_step(ref, got, k.name + " step " + std::to_string(g));
    }
  }
}

TEST(AgentModel, QualityOnTwentyHeldOutPrompts) {
  using namespace ds4::agent_eval;
  const std::vector<Case> cases = load_cases(DS4D_AGENT_DATA "/ds4-tiny-agent.eval20.jsonl");
  ASSERT_EQ(cases.size(), 20u);
  ds4::LoadOptions lo;
  lo.threads = 2;
  const Report r = evaluate(ds4::serving::Ds4Backend::load(DS4D_AGENT_MODEL, lo), cases);
  EXPECT_EQ(r.ids_mismatch, 0u) << "Python and C++ render or tokenize a prompt differently";
  for (size_t i = 0; i < r.results.size(); ++i)
    std::printf("[ case %2zu ] %s%s %s: %s\n", i, cases[i].kind.c_str(), cases[i].heldout ? " (held-out)" : "",
                r.results[i].pass ? "pass" : "FAIL", r.results[i].detail.c_str());
  // Bounds per schema group (seen, held-out): the levels this model measured on these 20 prompts
  // (models/CMakeLists.txt says how they relate to the targets).
  const double min_dsml[2] = {DS4D_AGENT_MIN_DSML_SEEN, DS4D_AGENT_MIN_DSML_HELDOUT};
  const double min_call[2] = {DS4D_AGENT_MIN_CALL_SEEN, DS4D_AGENT_MIN_CALL_HELDOUT};
  const double min_answer[2] = {DS4D_AGENT_MIN_ANSWER_SEEN, DS4D_AGENT_MIN_ANSWER_HELDOUT};
  const double min_plain[2] = {DS4D_AGENT_MIN_PLAIN_SEEN, DS4D_AGENT_MIN_PLAIN_HELDOUT};
  for (int h = 0; h < 2; ++h) {
    const char* which = h ? "held-out" : "seen";
    EXPECT_GE(r.well_formed[h].rate(), min_dsml[h]) << which << " schemas: well-formed DSML where a call is needed";
    EXPECT_GE(r.call[h].rate(), min_call[h]) << which << " schemas: tool calls";
    EXPECT_GE(r.answer[h].rate(), min_answer[h]) << which << " schemas: answers from tool results";
    EXPECT_GE(r.plain[h].rate(), min_plain[h]) << which << " schemas: plain chat without tool calls";
  }
}

}  // namespace
