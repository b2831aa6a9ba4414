// Order-preserving SIMD kernels (engine/kernels/ordered_simd.hpp) against their sequential
// references, bit for bit: the F16 matvec against the F16 format's scalar dot row by row, the
// lane-wise dots against one sequential f32 sum per lane, axpy against the elementwise loop.
// Shapes cover partial 8-row tiles, columns that are not a multiple of 8, a row range that does
// not start at 0, and more than 64 lanes (the kernel walks lanes in groups of 64).
#include "engine/kernels/ordered_simd.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/quant.hpp"

namespace ds4::kernels {
namespace {

std::vector<float> normal(size_t n, float sigma, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(OrderedSimd, F16MatvecRowsMatchesTheScalarF16Dot) {
  std::mt19937 rng(11);
  const quant::Traits& f16 = quant::traits(quant::Type::F16);
  for (int64_t cols : {1, 7, 8, 13, 64, 203}) {
    const int64_t rows = 29;
    const std::vector<float> wf = normal(size_t(rows * cols), 0.7f, rng);
    std::vector<uint16_t> W(wf.size());
    f16.quantize(wf.data(), W.data(), int64_t(wf.size()));
    const std::vector<float> x = normal(size_t(cols), 1.3f, rng);
    for (int64_t r0 : {0, 3}) {
      std::vector<float> out(size_t(rows - r0));
      ordered::f16_matvec_rows(W.data(), cols, r0, rows, x.data(), out.data());
      for (int64_t r = r0; r < rows; r++) {
        const float ref =
            quant::cpu_kernels(quant::Type::F16, quant::Arch::Generic).dot(W.data() + r * cols, x.data(), cols);
        ASSERT_TRUE(same_bits(out[size_t(r - r0)], ref))
            << "cols " << cols << " row " << r << ": " << out[size_t(r - r0)] << " vs " << ref;
      }
    }
  }
}

TEST(OrderedSimd, DotLanesIsOneSequentialSumPerLane) {
  std::mt19937 rng(12);
  for (uint32_t lanes : {8u, 16u, 72u, 136u}) {
    for (uint32_t d : {1u, 9u, 128u}) {
      const std::vector<float> qT = normal(size_t(lanes) * d, 1.0f, rng);
      const std::vector<float> k = normal(d, 2.0f, rng);
      std::vector<float> out(lanes);
      ordered::dot_lanes(qT.data(), lanes, k.data(), d, out.data());
      for (uint32_t l = 0; l < lanes; l++) {
        float ref = 0.0f;
        for (uint32_t i = 0; i < d; i++) ref += qT[size_t(i) * lanes + l] * k[i];
        ASSERT_TRUE(same_bits(out[l], ref)) << "lanes " << lanes << " d " << d << " lane " << l;
      }
    }
  }
}

TEST(OrderedSimd, AxpyIsElementwise) {
  std::mt19937 rng(13);
  for (uint32_t n : {1u, 8u, 21u, 512u}) {
    const std::vector<float> x = normal(n, 1.0f, rng);
    std::vector<float> y = normal(n, 1.0f, rng), ref = y;
    const float a = 0.37f;
    ordered::axpy(y.data(), x.data(), a, n);
    for (uint32_t i = 0; i < n; i++) ref[i] += a * x[i];
    for (uint32_t i = 0; i < n; i++) ASSERT_TRUE(same_bits(y[i], ref[i])) << "n " << n << " i " << i;
  }
}

}  // namespace
}  // namespace ds4::kernels
