// The importance-weighted weight quantizers (docs/quant.md §importance-weighted-quantization):
// without importance the bytes are those the quantizers wrote before the weighted mode existed
// (golden hashes captured at commit 1f32fe0, the last commit without it); with a skewed
// importance vector the bytes change and the importance-weighted squared error
// Σ_j w_j (x_j - q_j)² goes down, for every format that has a weighted mode.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

constexpr int64_t kRows = 16, kCols = 512;

// Deterministic weights without libm (the bytes must not depend on the platform's log/cos):
// Irwin-Hall sums of four uniforms from a 64-bit LCG, a per-row scale, and one outlier in 64.
std::vector<float> synthetic_tensor() {
  std::vector<float> x(kRows * kCols);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto uniform = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(s >> 40) / static_cast<float>(1u << 24);
  };
  for (int64_t r = 0; r < kRows; ++r) {
    const float scale = 0.01f * static_cast<float>(1 + r % 5);
    for (int64_t c = 0; c < kCols; ++c) {
      float v = uniform() + uniform() + uniform() + uniform() - 2.0f;
      if (uniform() < 1.0f / 64) v *= 4.0f;
      x[r * kCols + c] = scale * v;
    }
  }
  return x;
}

// Skewed per-column importance, as an imatrix of a real layer looks: most columns near 1, one in
// eight hundreds of times larger (the activation outlier channels).
std::vector<float> skewed_importance() {
  std::vector<float> w(kCols);
  for (int64_t c = 0; c < kCols; ++c)
    w[c] = (c * 37 % 8 == 3) ? 300.0f + static_cast<float>(c % 7) : 0.5f + static_cast<float>(c % 3) * 0.25f;
  return w;
}

uint64_t fnv1a(const std::vector<uint8_t>& b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<uint8_t> quantize_tensor(Type t, const std::vector<float>& x, const float* importance) {
  const size_t rb = row_bytes(t, kCols);
  std::vector<uint8_t> q(rb * kRows);
  for (int64_t r = 0; r < kRows; ++r) quantize_row(t, x.data() + r * kCols, q.data() + r * rb, kCols, importance);
  return q;
}

double weighted_error(Type t, const std::vector<float>& x, const std::vector<uint8_t>& q, const std::vector<float>& w) {
  const size_t rb = row_bytes(t, kCols);
  std::vector<float> d(kCols);
  double e = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    traits(t).dequantize(q.data() + r * rb, d.data(), kCols);
    for (int64_t c = 0; c < kCols; ++c) {
      const double diff = double(x[r * kCols + c]) - d[c];
      e += w[c] * diff * diff;
    }
  }
  return e;
}

struct Golden {
  Type type;
  uint64_t hash;  // FNV-1a of the synthetic tensor's bytes at commit 1f32fe0
};

TEST(WeightedQuant, WithoutImportanceTheBytesAreUnchanged) {
  const std::vector<float> x = synthetic_tensor();
  const Golden golden[] = {
      {Type::IQ2_XXS, 0x84d72bd44befd04bull},
      {Type::Q2_K, 0x91fa15530116f64full},
      {Type::Q4_K, 0xeedbd633cc53c933ull},
      {Type::Q8_0, 0x7f88aed1e35d2052ull},
  };
  for (const Golden& g : golden) {
    const std::vector<uint8_t> q = quantize_tensor(g.type, x, nullptr);
    EXPECT_EQ(fnv1a(q), g.hash) << type_info(g.type).name;
    // The plain traits entry is the same quantizer.
    std::vector<uint8_t> p(q.size());
    const size_t rb = row_bytes(g.type, kCols);
    for (int64_t r = 0; r < kRows; ++r) traits(g.type).quantize(x.data() + r * kCols, p.data() + r * rb, kCols);
    EXPECT_EQ(p, q) << type_info(g.type).name;
  }
}

TEST(WeightedQuant, SkewedImportanceChangesTheBytesAndLowersTheWeightedError) {
  const std::vector<float> x = synthetic_tensor();
  const std::vector<float> w = skewed_importance();
  for (const Type t : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K}) {
    ASSERT_NE(traits(t).quantize_weighted, nullptr) << type_info(t).name;
    const std::vector<uint8_t> plain = quantize_tensor(t, x, nullptr);
    const std::vector<uint8_t> weighted = quantize_tensor(t, x, w.data());
    EXPECT_NE(plain, weighted) << type_info(t).name;
    const double ep = weighted_error(t, x, plain, w), ew = weighted_error(t, x, weighted, w);
    std::printf("[ weighted ] %-8s Σw(x-q)²: plain %.6g, weighted %.6g (%.1f%% lower)\n", type_info(t).name.data(), ep,
                ew, 100.0 * (1.0 - ew / ep));
    EXPECT_LT(ew, 0.95 * ep) << type_info(t).name;
  }
}

TEST(WeightedQuant, UniformImportanceStillDecodesAndZeroImportanceFallsBack) {
  const std::vector<float> x = synthetic_tensor();
  const std::vector<float> ones(kCols, 1.0f), zeros(kCols, 0.0f);
  for (const Type t : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::Q8_0}) {
    // All-zero importance carries no information: the plain quantizer's bytes.
    EXPECT_EQ(quantize_tensor(t, x, zeros.data()), quantize_tensor(t, x, nullptr)) << type_info(t).name;
    // Uniform importance must stay a sane quantizer: unweighted error within 10% of the plain one.
    const std::vector<uint8_t> u = quantize_tensor(t, x, ones.data());
    EXPECT_LT(weighted_error(t, x, u, ones), 1.1 * weighted_error(t, x, quantize_tensor(t, x, nullptr), ones))
        << type_info(t).name;
  }
}

}  // namespace
}  // namespace ds4::quant
