// Scalar vs AVX2 dots on random data. For the integer-dot formats the two must be bit-identical
// (exact mode does not depend on the ISA); for F32/F16/BF16 AVX2 reorders the float sum, so
// they agree to a tolerance relative to Σ|w·x|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/blocks.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

using namespace detail;

// Random but well-formed weight rows: random level/sign/grid bytes, scales in a sane range.
std::vector<uint8_t> random_weights(Type type, int64_t n, std::mt19937& rng) {
  const size_t bytes = row_bytes(type, static_cast<uint64_t>(n));
  std::vector<uint8_t> w(bytes);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f), val(-1.0f, 1.0f);
  auto f16 = [&] { return f32_to_f16(scale(rng)); };
  switch (type) {
    case Type::Q8_0:
      for (auto* b = reinterpret_cast<BlockQ8_0*>(w.data()); b < reinterpret_cast<BlockQ8_0*>(w.data() + bytes); b++)
        b->d = f16();
      break;
    case Type::Q2_K:
      for (auto* b = reinterpret_cast<BlockQ2_K*>(w.data()); b < reinterpret_cast<BlockQ2_K*>(w.data() + bytes); b++)
        b->d = f16(), b->dmin = f16();
      break;
    case Type::Q4_K:
      for (auto* b = reinterpret_cast<BlockQ4_K*>(w.data()); b < reinterpret_cast<BlockQ4_K*>(w.data() + bytes); b++)
        b->d = f16(), b->dmin = f16();
      break;
    case Type::IQ2_XXS:
      for (auto* b = reinterpret_cast<BlockIQ2_XXS*>(w.data());
           b < reinterpret_cast<BlockIQ2_XXS*>(w.data() + bytes); b++)
        b->d = f16();
      break;
    case Type::MXFP4:
      for (auto* b = reinterpret_cast<BlockMXFP4*>(w.data()); b < reinterpret_cast<BlockMXFP4*>(w.data() + bytes);
           b++)
        b->e = static_cast<uint8_t>(115 + rng() % 16);
      break;
    case Type::F32:
      for (auto* f = reinterpret_cast<float*>(w.data()); f < reinterpret_cast<float*>(w.data() + bytes); f++)
        *f = val(rng);
      break;
    case Type::F16:
      for (auto* h = reinterpret_cast<uint16_t*>(w.data()); h < reinterpret_cast<uint16_t*>(w.data() + bytes); h++)
        *h = f32_to_f16(val(rng));
      break;
    case Type::BF16:
      for (auto* h = reinterpret_cast<uint16_t*>(w.data()); h < reinterpret_cast<uint16_t*>(w.data() + bytes); h++)
        *h = f32_to_bf16(val(rng));
      break;
    default:
      ADD_FAILURE() << "no generator for type " << static_cast<int>(type);
  }
  return w;
}

// Activations through the real quantizer, from heavy-tailed random floats.
std::vector<uint8_t> random_activation(Type w_type, int64_t n, std::mt19937& rng) {
  std::student_t_distribution<float> dist(3.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  const Type vdt = traits(w_type).vec_dot_type;
  std::vector<uint8_t> act(act_row_bytes(vdt, n));
  quantize_activation(vdt, x.data(), act.data(), n);
  return act;
}

class SimdIdentityTest : public ::testing::TestWithParam<Type> {
 protected:
  void SetUp() override {
    if (best_isa() != Isa::Avx2) GTEST_SKIP() << "CPU without AVX2 (or DS4D_ISA=scalar)";
  }
};

TEST_P(SimdIdentityTest, IntegerDotsAreBitIdentical) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  ASSERT_NE(t.dot_avx2, nullptr);
  std::mt19937 rng(1234 + static_cast<int>(type));
  // Block counts 1..19 cover the 8-block SIMD batches and every tail length.
  for (int blocks = 1; blocks <= 19; blocks++) {
    const int64_t n = static_cast<int64_t>(blocks) * t.block_elems;
    for (int trial = 0; trial < 20; trial++) {
      const std::vector<uint8_t> w = random_weights(type, n, rng);
      const std::vector<uint8_t> a = random_activation(type, n, rng);
      const float s = t.dot_scalar(w.data(), a.data(), n);
      const float v = t.dot_avx2(w.data(), a.data(), n);
      ASSERT_EQ(std::memcmp(&s, &v, 4), 0) << "blocks " << blocks << " trial " << trial << ": " << s << " vs " << v;
      ASSERT_EQ(dot(type, w.data(), a.data(), n, Isa::Avx2), v);
      const float e = dot(type, w.data(), a.data(), n, Isa::Avx2Exact);
      ASSERT_EQ(std::memcmp(&s, &e, 4), 0) << "avx2-exact, blocks " << blocks << " trial " << trial;
    }
  }
}

TEST_P(SimdIdentityTest, MultiRowKernelMatchesSingleRow) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  ASSERT_NE(t.dot_multi_avx2, nullptr);
  std::mt19937 rng(77 + static_cast<int>(type));
  const int64_t n = 3 * 256;
  const size_t arb = act_row_bytes(t.vec_dot_type, n), stride = arb + 40;  // padded rows
  for (int n_act = 1; n_act <= 19; n_act++) {
    const std::vector<uint8_t> w = random_weights(type, n, rng);
    std::vector<uint8_t> acts(stride * static_cast<size_t>(n_act));
    for (int r = 0; r < n_act; r++) {
      const std::vector<uint8_t> a = random_activation(type, n, rng);
      std::memcpy(acts.data() + r * stride, a.data(), arb);
    }
    std::vector<float> out(static_cast<size_t>(n_act));
    t.dot_multi_avx2(w.data(), acts.data(), stride, n_act, n, out.data());
    for (int r = 0; r < n_act; r++) {
      const float s = t.dot_scalar(w.data(), acts.data() + r * stride, n);
      ASSERT_EQ(std::memcmp(&s, &out[static_cast<size_t>(r)], 4), 0) << "n_act " << n_act << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(IntegerFormats, SimdIdentityTest,
                         ::testing::Values(Type::Q8_0, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::MXFP4),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

class FloatSimdTest : public SimdIdentityTest {};

TEST_P(FloatSimdTest, ReorderedSumIsClose) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  std::mt19937 rng(99);
  for (int64_t n : {1, 7, 8, 31, 32, 33, 100, 512, 4096}) {
    const std::vector<uint8_t> w = random_weights(type, n, rng);
    const std::vector<uint8_t> a = random_activation(type, n, rng);
    std::vector<float> wf(static_cast<size_t>(n));
    t.dequantize(w.data(), wf.data(), n);
    const float* x = reinterpret_cast<const float*>(a.data());
    double mag = 0;
    for (int64_t i = 0; i < n; i++) mag += std::fabs(static_cast<double>(wf[i]) * x[i]);
    const float s = t.dot_scalar(w.data(), a.data(), n), v = t.dot_avx2(w.data(), a.data(), n);
    EXPECT_NEAR(s, v, 1e-5 * mag + 1e-30) << "n " << n;
  }
}

TEST_P(FloatSimdTest, ExactVariantIsBitIdenticalToScalar) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  ASSERT_NE(t.dot_avx2_exact, nullptr);
  std::mt19937 rng(5);
  for (int64_t n = 1; n <= 70; n++) {  // every tail length for 4- and 8-wide steps
    for (int trial = 0; trial < 5; trial++) {
      const std::vector<uint8_t> w = random_weights(type, n, rng);
      const std::vector<uint8_t> a = random_activation(type, n, rng);
      const float s = t.dot_scalar(w.data(), a.data(), n), e = t.dot_avx2_exact(w.data(), a.data(), n);
      ASSERT_EQ(std::memcmp(&s, &e, 4), 0) << "n " << n << ": " << s << " vs " << e;
    }
  }
  const std::vector<uint8_t> w = random_weights(type, 4096, rng), a = random_activation(type, 4096, rng);
  const float s = t.dot_scalar(w.data(), a.data(), 4096), e = dot(type, w.data(), a.data(), 4096, exact_isa());
  EXPECT_EQ(std::memcmp(&s, &e, 4), 0);
}

INSTANTIATE_TEST_SUITE_P(FloatFormats, FloatSimdTest, ::testing::Values(Type::F32, Type::F16, Type::BF16),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

}  // namespace
}  // namespace ds4::quant
