#pragma once
// Logit agreement between two engine runs, at the statistical thresholds of the ds4-tiny
// vectors' README ("Tolerance"): Pearson >= 0.98, rms(Δ)/std(ref) <= 0.2, max|Δ|/max|ref| <= 0.25,
// and the same argmax where the reference's top-1 leads its top-2 by more than 1.0. Shared by the
// converter tests that compare a conversion with the model it came from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

namespace ds4::convert::test {

struct Agreement {
  double pearson = 1, rms_ratio = 0, max_ratio = 0;
  double rms_sum = 0;  // over the noted comparisons, for their mean rms/std
  size_t n = 0;
  // Keeps the worst of each statistic (and the sum for the mean).
  void note(const Agreement& a) {
    pearson = std::min(pearson, a.pearson), rms_ratio = std::max(rms_ratio, a.rms_ratio);
    max_ratio = std::max(max_ratio, a.max_ratio);
    rms_sum += a.rms_ratio, ++n;
  }
  double mean_rms_ratio() const { return n ? rms_sum / double(n) : rms_ratio; }
};

// Measures got against ref; with `check`, also checks the thresholds (gtest failures name `what`).
inline Agreement compare(std::span<const float> got, std::span<const float> ref, const std::string& what,
                         bool check = true) {
  const size_t n = ref.size();
  double mr = 0, mg = 0;
  for (size_t i = 0; i < n; i++) mr += ref[i], mg += got[i];
  mr /= n, mg /= n;
  double sxy = 0, sxx = 0, syy = 0, sdd = 0, maxd = 0, maxref = 0;
  for (size_t i = 0; i < n; i++) {
    const double a = ref[i] - mr, b = got[i] - mg, d = double(got[i]) - ref[i];
    sxy += a * b, sxx += a * a, syy += b * b, sdd += d * d;
    maxd = std::max(maxd, std::fabs(d));
    maxref = std::max(maxref, double(std::fabs(ref[i])));
  }
  Agreement g{sxy / std::sqrt(sxx * syy), std::sqrt(sdd / n) / std::sqrt(sxx / n), maxd / maxref};
  if (!check) return g;
  EXPECT_GE(g.pearson, 0.98) << what;
  EXPECT_LE(g.rms_ratio, 0.2) << what;
  EXPECT_LE(g.max_ratio, 0.25) << what;
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; i++) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + 2, idx.end(), [&](size_t a, size_t b) { return ref[a] > ref[b]; });
  if (ref[idx[0]] - ref[idx[1]] > 1.0f) {
    EXPECT_EQ(size_t(std::max_element(got.begin(), got.end()) - got.begin()), idx[0]) << what;
  }
  return g;
}

}  // namespace ds4::convert::test
