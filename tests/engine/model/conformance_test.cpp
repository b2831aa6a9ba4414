// Conformance against antirez/ds4: load the ds4-tiny GGUF unchanged and compare every logit
// vector in cases.bin (prompt, teacher-forced decode steps, prefixes). Exact mode must match to
// 1e-5 (the goal is bit-exact). Fast mode is another operation order (docs/arithmetic.md), and
// the random weights of ds4-tiny turn its rounding differences into flipped expert and indexer
// choices, so it is held to the README's statistical thresholds as a distribution: the prompt's
// vector and at least 90 % of each case's vectors within all of them, every vector's Pearson
// >= 0.95, and the argmax wherever the reference margin exceeds 1.0 (measured numbers:
// docs/arithmetic.md §fidelity).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>

#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4 {
namespace {

struct Fixture {
  test::TinyCases cases;
  std::shared_ptr<Model> exact, fast;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    const auto dir = test::tiny_vectors_dir();
    x.cases = test::load_tiny_cases(dir / "cases.bin");
    LoadOptions o;
    o.arithmetic = Arithmetic::Exact;
    x.exact = Model::load(dir / "model.gguf", o);
    o.arithmetic = Arithmetic::Fast;
    x.fast = Model::load(dir / "model.gguf", o);
    return x;
  }();
  return f;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

struct Worst {
  double pearson = 1, rms_ratio = 0, max_ratio = 0;
};
thread_local Worst g_worst;

// Statistical agreement as the ds4-tiny README defines it: true when the vector meets every
// threshold. The argmax rule (reference margin > 1.0) and Pearson >= 0.95 are required always.
bool statistically_close(std::span<const float> got, std::span<const float> ref, const std::string& what) {
  const size_t n = ref.size();
  double mr = 0, mg = 0;
  for (size_t i = 0; i < n; i++) mr += ref[i], mg += got[i];
  mr /= n;
  mg /= n;
  double sxy = 0, sxx = 0, syy = 0, sdd = 0, maxd = 0, maxref = 0;
  for (size_t i = 0; i < n; i++) {
    const double a = ref[i] - mr, b = got[i] - mg, d = double(got[i]) - ref[i];
    sxy += a * b, sxx += a * a, syy += b * b, sdd += d * d;
    maxd = std::max(maxd, std::fabs(d));
    maxref = std::max(maxref, double(std::fabs(ref[i])));
  }
  const double pearson = sxy / std::sqrt(sxx * syy);
  const double std_ref = std::sqrt(sxx / n), rms = std::sqrt(sdd / n);
  g_worst.pearson = std::min(g_worst.pearson, pearson);
  g_worst.rms_ratio = std::max(g_worst.rms_ratio, rms / std_ref);
  g_worst.max_ratio = std::max(g_worst.max_ratio, maxd / maxref);
  EXPECT_GE(pearson, 0.95) << what;
  const bool within = pearson >= 0.98 && rms <= 0.2 * std_ref && maxd <= 0.25 * maxref;
  if (!within)
    std::printf("[ fast     ] %s outside the thresholds: Pearson %.4f, rms/std %.3f, max|d|/max|logit| %.3f\n",
                what.c_str(), pearson, rms / std_ref, maxd / maxref);
  // argmax must agree where the reference margin exceeds 1.0
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; i++) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + 2, idx.end(), [&](size_t a, size_t b) { return ref[a] > ref[b]; });
  if (ref[idx[0]] - ref[idx[1]] > 1.0f) {
    const size_t am = size_t(std::max_element(got.begin(), got.end()) - got.begin());
    EXPECT_EQ(am, idx[0]) << what;
  }
  return within;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

const test::TinyCase& find_case(const std::string& name) {
  for (const auto& c : fixture().cases.cases)
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

TEST_P(Conformance, ExactPromptAndTeacherForcedDecode) {
  const auto& k = find_case(GetParam());
  Context ctx(fixture().exact);
  auto logits = ctx.prefill(k.prompt);
  float worst = max_abs_diff(logits, k.logits);
  EXPECT_LE(worst, 1e-5f) << k.name << " prompt";
  for (size_t g = 0; g < k.gen.size(); g++) {
    auto l = ctx.decode(k.gen[g]);
    const float d = max_abs_diff(l, k.gen_logits[g]);
    worst = std::max(worst, d);
    EXPECT_LE(d, 1e-5f) << k.name << " decode step " << g;
  }
  RecordProperty("max_abs_diff", std::to_string(worst));
  std::printf("[ exact    ] %s: max |dlogit| over prompt + %zu decode steps = %g\n", k.name.c_str(), k.gen.size(),
              double(worst));
}

TEST_P(Conformance, ExactPrefixes) {
  const auto& k = find_case(GetParam());
  for (const auto& [len, ref] : k.prefixes) {
    Context ctx(fixture().exact);
    auto logits = ctx.prefill(std::span<const int32_t>(k.prompt.data(), len));
    const float d = max_abs_diff(logits, ref);
    EXPECT_LE(d, 1e-5f) << k.name << " prefix " << len;
    std::printf("[ exact    ] %s prefix %u: max |dlogit| = %g\n", k.name.c_str(), len, double(d));
  }
}

TEST_P(Conformance, FastStatistical) {
  const auto& k = find_case(GetParam());
  g_worst = Worst{};
  Context ctx(fixture().fast);
  EXPECT_TRUE(statistically_close(ctx.prefill(k.prompt), k.logits, k.name + " prompt"));
  size_t vectors = 1, within = 1;
  for (size_t g = 0; g < k.gen.size(); g++, vectors++)
    within += statistically_close(ctx.decode(k.gen[g]), k.gen_logits[g], k.name + " step " + std::to_string(g));
  for (const auto& [len, ref] : k.prefixes) {
    Context c2(fixture().fast);
    within += statistically_close(c2.prefill(std::span<const int32_t>(k.prompt.data(), len)), ref,
                                  k.name + " prefix " + std::to_string(len));
    vectors++;
  }
  EXPECT_GE(double(within), 0.9 * double(vectors)) << within << " of " << vectors << " vectors within the thresholds";
  std::printf(
      "[ fast     ] %s: %zu of %zu vectors within all thresholds; min Pearson %.6f, max rms/std %.4f, "
      "max |d|/max|logit| %.4f\n",
      k.name.c_str(), within, vectors, g_worst.pearson, g_worst.rms_ratio, g_worst.max_ratio);
}

INSTANTIATE_TEST_SUITE_P(DsTiny, Conformance, ::testing::Values("rand8", "text64", "rand300", "rand600"));

}  // namespace
}  // namespace ds4
