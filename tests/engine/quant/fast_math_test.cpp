// The Fast order's own transcendentals (engine/quant/fast_math.hpp) against binary64/long double
// references: accuracy in ulps over dense sweeps of every binary32 range the model feeds them,
// and the special values (NaN, infinities, overflow and the subnormal results of exp).
#include "engine/quant/fast_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

namespace fm = ds4::quant::fast;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Distance in representable binary32 values between `got` and the binary32 rounding of `want`.
int64_t ulps(float got, double want) {
  const auto ordered = [](float f) {
    const int64_t u = bits(f);
    return u & 0x80000000 ? -(u & 0x7fffffff) : u;
  };
  return std::llabs(ordered(got) - ordered(static_cast<float>(want)));
}

// samples + 1 binary32 values from lo to hi (both finite), evenly spaced in bit order.
template <typename F>
void sweep(float lo, float hi, uint32_t samples, F&& check) {
  const double n = double(samples);
  for (uint32_t i = 0; i <= samples; i++) {
    // Uniform in the ordered-bits space: dense near zero, as the values the model produces.
    const double t = i / n;
    const int64_t olo = bits(lo) & 0x80000000 ? -int64_t(bits(lo) & 0x7fffffff) : int64_t(bits(lo));
    const int64_t ohi = bits(hi) & 0x80000000 ? -int64_t(bits(hi) & 0x7fffffff) : int64_t(bits(hi));
    const int64_t o = olo + int64_t(std::llround(t * double(ohi - olo)));
    check(o < 0 ? from_bits(uint32_t(-o) | 0x80000000u) : from_bits(uint32_t(o)));
  }
}

TEST(FastMath, ExpWithinOneUlpEverywhere) {
  int64_t worst = 0;
  float at = 0;
  sweep(-103.97f, 88.72f, 2'000'000, [&](float x) {
    const int64_t e = ulps(fm::exp(x), std::exp(double(x)));
    if (e > worst) worst = e, at = x;
  });
  std::printf("exp: worst %lld ulp (x = %.9g)\n", static_cast<long long>(worst), double(at));
  EXPECT_LE(worst, 1) << "at x = " << at;
  // Exact values and specials.
  EXPECT_EQ(fm::exp(0.0f), 1.0f);
  EXPECT_EQ(fm::exp(-0.0f), 1.0f);
  EXPECT_EQ(fm::exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fm::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(fm::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fm::exp(88.7228394f), std::numeric_limits<float>::infinity());  // above ln(FLT_MAX)
  EXPECT_TRUE(std::isfinite(fm::exp(88.7228317f)));
  EXPECT_EQ(fm::exp(-200.0f), 0.0f);
}

TEST(FastMath, ExpSubnormalResultsRoundOnce) {
  // Below e^-87.3 the result is subnormal: the error is then at most one subnormal step.
  for (float x = -103.9f; x < -87.0f; x += 0.0137f) {
    const double want = std::exp(double(x));
    const float got = fm::exp(x);
    EXPECT_LE(std::fabs(double(got) - want), std::ldexp(1.0, -149)) << x;
  }
}

TEST(FastMath, Log1pOnTheUnitInterval) {
  int64_t worst = 0;
  float at = 0;
  sweep(0.0f, 1.0f, 1'000'000, [&](float y) {
    const int64_t e = ulps(fm::log1p_unit(y), std::log1p(double(y)));
    if (e > worst) worst = e, at = y;
  });
  std::printf("log1p: worst %lld ulp (y = %.9g)\n", static_cast<long long>(worst), double(at));
  EXPECT_LE(worst, 2) << "at y = " << at;
  EXPECT_EQ(fm::log1p_unit(0.0f), 0.0f);
}

TEST(FastMath, SoftplusSigmoidSiluWithinTwoUlps) {
  int64_t worst_sp = 0, worst_sg = 0, worst_ss = 0, worst_si = 0;
  sweep(-40.0f, 40.0f, 1'000'000, [&](float x) {
    const double xd = x, e = std::exp(xd);
    const double sp = x > 20.0f ? xd : x < -20.0f ? e : std::log1p(e);
    const double sg = 1.0 / (1.0 + std::exp(-xd));
    worst_sp = std::max(worst_sp, ulps(fm::softplus(x), sp));
    worst_sg = std::max(worst_sg, ulps(fm::sigmoid(x), sg));
    worst_ss = std::max(worst_ss, ulps(fm::sigmoid_stable(x), sg));
    worst_si = std::max(worst_si, ulps(fm::silu(x), xd * sg));
  });
  std::printf("softplus %lld, sigmoid %lld, sigmoid_stable %lld, silu %lld ulp\n", static_cast<long long>(worst_sp),
              static_cast<long long>(worst_sg), static_cast<long long>(worst_ss), static_cast<long long>(worst_si));
  EXPECT_LE(worst_sp, 2);
  EXPECT_LE(worst_sg, 2);
  EXPECT_LE(worst_ss, 2);
  EXPECT_LE(worst_si, 3);
  // The cut-offs are ds4's.
  EXPECT_EQ(fm::softplus(25.0f), 25.0f);
  EXPECT_EQ(fm::softplus(-25.0f), fm::exp(-25.0f));
}

TEST(FastMath, SinCosOfRopeAnglesToBinary64) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> small(0.0, 8.0), large(0.0, 1.6e6);
  double worst = 0;
  for (int i = 0; i < 200'000; i++) {
    const double th = i % 2 ? small(rng) : large(rng);
    double s, c;
    fm::sincos(th, &s, &c);
    const long double ls = std::sin(static_cast<long double>(th)), lc = std::cos(static_cast<long double>(th));
    worst = std::max(worst, double(std::fabs(s - ls)));
    worst = std::max(worst, double(std::fabs(c - lc)));
    ASSERT_LE(ulps(float(s), double(ls)), 1) << th;
    ASSERT_LE(ulps(float(c), double(lc)), 1) << th;
  }
  std::printf("sincos: worst |error| %.3g\n", worst);
  EXPECT_LE(worst, 1e-15);
  double s, c;
  fm::sincos(0.0, &s, &c);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(c, 1.0);
}

}  // namespace
