// Sampler: greedy semantics, each filter's effect, seed determinism, and chi-square goodness of
// fit of the draws against the distribution the settings define. The seeds are fixed, so the
// tests are deterministic, but a biased sampler (wrong temperature, off-by-one in a filter, a
// skewed draw) moves the statistic far past the critical value.
#include "engine/sampler/sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace ds4::sampler {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Reference outputs of xoshiro256** seeded by four splitmix64 steps, computed independently.
TEST(Xoshiro256, KnownOutputs) {
  Xoshiro256 a(0);
  EXPECT_EQ(a.next(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(a.next(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(a.next(), 0x1a5f849d4933e6e0ULL);
  Xoshiro256 b(12345);
  EXPECT_EQ(b.next(), 0xbe6a36374160d49bULL);
  EXPECT_EQ(b.next(), 0x214aaa0637a688c6ULL);
  EXPECT_EQ(b.next(), 0xf69d16de9954d388ULL);
}

TEST(Sampler, GreedyTakesHighestAndLowestIdOnTies) {
  Sampler s({.temperature = 0.0f});
  std::vector<float> l{1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  EXPECT_EQ(s.sample(l), 1);
  l[0] = 3.0f;
  EXPECT_EQ(s.sample(l), 0);
  // top_k = 1 is greedy too, whatever the temperature.
  Sampler k1({.temperature = 5.0f, .top_k = 1});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(k1.sample(l), 0);
}

TEST(Sampler, NonFiniteLogitsAreNeverChosen) {
  std::vector<float> l{kNaN, -kInf, 0.0f, kNaN, 0.0f, -kInf};
  Sampler greedy({.temperature = 0.0f});
  EXPECT_EQ(greedy.sample(l), 2);
  Sampler s({.temperature = 1.0f, .min_p = 0.0f, .seed = 9});
  for (int i = 0; i < 200; ++i) {
    int32_t t = s.sample(l);
    EXPECT_TRUE(t == 2 || t == 4) << t;
  }
  std::vector<float> none{kNaN, -kInf};
  EXPECT_THROW(s.sample(none), std::invalid_argument);
  EXPECT_THROW(greedy.sample(none), std::invalid_argument);
}

TEST(Sampler, RejectsSettingsOutsideTheirDomain) {
  EXPECT_THROW(Sampler({.temperature = kNaN}), std::invalid_argument);
  EXPECT_THROW(Sampler({.top_k = -1}), std::invalid_argument);
  EXPECT_THROW(Sampler({.top_p = 0.0f}), std::invalid_argument);
  EXPECT_THROW(Sampler({.top_p = 1.5f}), std::invalid_argument);
  EXPECT_THROW(Sampler({.min_p = -0.1f}), std::invalid_argument);
}

TEST(Sampler, DefaultsAreTheReferenceServers) {
  SamplerConfig c;
  EXPECT_EQ(c.temperature, 1.0f);
  EXPECT_EQ(c.top_p, 1.0f);
  EXPECT_EQ(c.min_p, 0.05f);
  EXPECT_EQ(c.top_k, 0);
}

std::vector<float> flat_logits(size_t n, uint64_t seed) {
  Xoshiro256 r(seed);
  std::vector<float> l(n);
  for (float& x : l) x = static_cast<float>(r.uniform() * 4.0);
  return l;
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const auto l = flat_logits(1000, 1);
  SamplerConfig c{.temperature = 1.0f, .min_p = 0.0f, .seed = 42};
  Sampler a(c), b(c);
  SamplerConfig c2 = c;
  c2.seed = 43;
  Sampler other(c2);
  std::vector<int32_t> ta, tb, to;
  for (int i = 0; i < 100; ++i) {
    ta.push_back(a.sample(l));
    tb.push_back(b.sample(l));
    to.push_back(other.sample(l));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, to);
  a.reseed(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(l), ta[static_cast<size_t>(i)]);
}

TEST(Sampler, LogprobIsTheModelsLogSoftmax) {
  std::vector<float> l{std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  Sampler s({.temperature = 0.0f});
  SampledToken t = s.sample_with_logprob(l);
  EXPECT_EQ(t.token, 0);
  EXPECT_NEAR(t.logprob, std::log(0.5), 1e-6);
  EXPECT_NEAR(log_softmax_at(l, 2), std::log(0.2), 1e-6);
  // The logprob ignores temperature and filters: it describes the model, not the sampler.
  Sampler hot({.temperature = 3.0f, .top_k = 2, .seed = 1});
  for (int i = 0; i < 20; ++i) {
    SampledToken u = hot.sample_with_logprob(l);
    EXPECT_NEAR(u.logprob, std::log(u.token == 0 ? 0.5 : 0.3), 1e-6);
  }
}

// Chi-square statistic of `n` draws against the expected probabilities (which sum to 1). Tokens
// the sampler must never draw are given probability 0 and counted separately.
struct Fit {
  double chi2 = 0.0;
  int degrees = 0;
  int64_t impossible_draws = 0;
};
Fit chi_square(Sampler& s, std::span<const float> logits, const std::vector<double>& expected, int64_t n) {
  std::vector<int64_t> counts(logits.size(), 0);
  for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(s.sample(logits))];
  Fit f;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 0.0) {
      f.impossible_draws += counts[i];
      continue;
    }
    const double e = expected[i] * static_cast<double>(n);
    f.chi2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
    ++f.degrees;
  }
  f.degrees -= 1;
  return f;
}

// Upper 0.1% points of the chi-square distribution.
double chi2_critical_999(int df) {
  static const std::map<int, double> table{{1, 10.828}, {2, 13.816}, {3, 16.266},
                                           {4, 18.467}, {5, 20.515}, {6, 22.458}};
  return table.at(df);
}

const std::vector<double> kProbs{0.40, 0.25, 0.15, 0.10, 0.06, 0.04};

std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x) + 1.75));  // shift is irrelevant
  return l;
}

std::vector<double> normalised(std::vector<double> w) {
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& x : w) x /= sum;
  return w;
}

constexpr int64_t kDraws = 200000;

TEST(SamplerStatistics, PlainTemperatureOneMatchesSoftmax) {
  Sampler s({.temperature = 1.0f, .min_p = 0.0f, .seed = 1001});
  const auto l = logits_of(kProbs);
  Fit f = chi_square(s, l, kProbs, kDraws);
  EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
}

TEST(SamplerStatistics, TestHasPowerAgainstASmallBias) {
  // The same draws judged against a distribution 2% (relative) off must fail clearly; otherwise
  // the goodness-of-fit tests above would prove nothing.
  Sampler s({.temperature = 1.0f, .min_p = 0.0f, .seed = 1001});
  const auto l = logits_of(kProbs);
  std::vector<double> biased = kProbs;
  biased[0] *= 1.02;
  biased[5] *= 0.8;
  Fit f = chi_square(s, l, normalised(biased), kDraws);
  EXPECT_GT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
}

TEST(SamplerStatistics, TemperatureSharpensAndFlattens) {
  const auto l = logits_of(kProbs);
  for (float t : {0.5f, 2.0f}) {
    std::vector<double> w;
    for (double p : kProbs) w.push_back(std::pow(p, 1.0 / t));
    Sampler s({.temperature = t, .min_p = 0.0f, .seed = 2002});
    Fit f = chi_square(s, l, normalised(w), kDraws);
    EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "T = " << t << " chi2 = " << f.chi2;
  }
}

TEST(SamplerStatistics, TopKKeepsTheKMostProbable) {
  const auto l = logits_of(kProbs);
  Sampler s({.temperature = 1.0f, .top_k = 3, .min_p = 0.0f, .seed = 3003});
  Fit f = chi_square(s, l, normalised({0.40, 0.25, 0.15, 0, 0, 0}), kDraws);
  EXPECT_EQ(f.impossible_draws, 0);
  EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
}

TEST(SamplerStatistics, MinPDropsTokensBelowAFractionOfTheTop) {
  // min_p 0.2 keeps p >= 0.08: the first four tokens.
  const auto l = logits_of(kProbs);
  Sampler s({.temperature = 1.0f, .min_p = 0.2f, .seed = 4004});
  Fit f = chi_square(s, l, normalised({0.40, 0.25, 0.15, 0.10, 0, 0}), kDraws);
  EXPECT_EQ(f.impossible_draws, 0);
  EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
}

TEST(SamplerStatistics, TopPKeepsTheShortestPrefixReachingTheMass) {
  // 0.40 + 0.25 = 0.65 < 0.7, + 0.15 = 0.80 >= 0.7: three tokens.
  const auto l = logits_of(kProbs);
  Sampler s({.temperature = 1.0f, .top_p = 0.7f, .min_p = 0.0f, .seed = 5005});
  Fit f = chi_square(s, l, normalised({0.40, 0.25, 0.15, 0, 0, 0}), kDraws);
  EXPECT_EQ(f.impossible_draws, 0);
  EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
}

TEST(SamplerStatistics, FiltersCombineAsIntersection) {
  // top_p 0.9 alone keeps five tokens (0.96 >= 0.9 at the fifth); min_p 0.3 alone keeps p >= 0.12
  // (three tokens); together three. top_p's mass is measured before min_p removes anything.
  const auto l = logits_of(kProbs);
  Sampler s({.temperature = 1.0f, .top_p = 0.9f, .min_p = 0.3f, .seed = 6006});
  Fit f = chi_square(s, l, normalised({0.40, 0.25, 0.15, 0, 0, 0}), kDraws);
  EXPECT_EQ(f.impossible_draws, 0);
  EXPECT_LT(f.chi2, chi2_critical_999(f.degrees)) << "chi2 = " << f.chi2;
  // top_k 4 renormalises to {.4,.25,.15,.1}/.9; top_p 0.7 of that is 0.63: two tokens.
  Sampler k({.temperature = 1.0f, .top_k = 4, .top_p = 0.7f, .min_p = 0.0f, .seed = 7007});
  Fit g = chi_square(k, l, normalised({0.40, 0.25, 0, 0, 0, 0}), kDraws);
  EXPECT_EQ(g.impossible_draws, 0);
  EXPECT_LT(g.chi2, chi2_critical_999(g.degrees)) << "chi2 = " << g.chi2;
}

TEST(SamplerStatistics, LargeVocabularyWithDefaultsMatchesFilteredSoftmax) {
  // 4096 tokens, default settings (min_p 0.05): the expected distribution is computed here from
  // the definition, and the draws are binned into 6 groups by probability rank.
  std::vector<float> l = flat_logits(4096, 8);
  for (size_t i = 0; i < 8; ++i) l[i * 500] += 3.0f;  // a few clear favourites
  double top = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  for (size_t i = 0; i < l.size(); ++i) {
    double w = std::exp(static_cast<double>(l[i]) - top);
    p[i] = w >= 0.05 ? w : 0.0;
  }
  p = normalised(p);
  Sampler s({.seed = 8008});
  constexpr int64_t kLargeDraws = 20000;  // each draw scans 4096 logits
  std::vector<int64_t> counts(l.size(), 0);
  for (int64_t i = 0; i < kLargeDraws; ++i) ++counts[static_cast<size_t>(s.sample(l))];
  // Group the allowed tokens into 6 bins of roughly equal expected mass.
  std::vector<size_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::vector<double> bin_p(6, 0.0), bin_n(6, 0.0);
  double cum = 0.0;
  int64_t forbidden = 0;
  for (size_t i : order) {
    if (p[i] == 0.0) {
      forbidden += counts[i];
      continue;
    }
    size_t b = std::min<size_t>(5, static_cast<size_t>(cum * 6.0));
    bin_p[b] += p[i];
    bin_n[b] += static_cast<double>(counts[i]);
    cum += p[i];
  }
  EXPECT_EQ(forbidden, 0);
  double chi2 = 0.0;
  int df = -1;
  for (size_t b = 0; b < 6; ++b) {
    if (bin_p[b] == 0.0) continue;
    double e = bin_p[b] * kLargeDraws;
    chi2 += (bin_n[b] - e) * (bin_n[b] - e) / e;
    ++df;
  }
  EXPECT_LT(chi2, chi2_critical_999(df)) << "chi2 = " << chi2;
}

}  // namespace
}  // namespace ds4::sampler
