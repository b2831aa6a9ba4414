// Activation quantization (docs/quant.md §activation-quantization) on hand-computed blocks: round half to even, the
// reciprocal multiply, Q8_K's signed max and negative scale, first-max-wins, zero blocks, bsums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "engine/quant/blocks.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

using detail::BlockQ8_0Act;
using detail::BlockQ8_K;

TEST(ActivationQ8_0, RoundsHalfToEvenAfterReciprocalMultiply) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax 127: d = 1, id = 1
  x[1] = 0.5f;
  x[2] = 1.5f;
  x[3] = 2.5f;
  x[4] = -0.5f;
  x[5] = -1.5f;
  x[6] = -2.5f;
  x[7] = 3.49f;
  BlockQ8_0Act b{};
  quantize_activation(Type::Q8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, 1.0f);
  const int want[8] = {127, 0, 2, 2, 0, -2, -2, 3};
  for (int i = 0; i < 8; i++) EXPECT_EQ(b.qs[i], want[i]) << i;
}

TEST(ActivationQ8_0, ScaleIsAmaxOver127InF32) {
  std::vector<float> x(32, 0.1f);
  x[9] = -3.0f;
  BlockQ8_0Act b{};
  quantize_activation(Type::Q8_0, x.data(), &b, 32);
  EXPECT_EQ(b.d, 3.0f / 127.0f);
  EXPECT_EQ(b.qs[9], -127);
  const float id = 1.0f / (3.0f / 127.0f);
  EXPECT_EQ(b.qs[0], static_cast<int>(std::nearbyint(0.1f * id)));  // 4.233.. -> 4
  EXPECT_EQ(b.qs[0], 4);
}

TEST(ActivationQ8_0, ZeroBlockHasZeroScale) {
  std::vector<float> x(64, 0.0f);
  x[40] = 1.0f;  // second block non-zero
  BlockQ8_0Act b[2]{};
  quantize_activation(Type::Q8_0, x.data(), b, 64);
  EXPECT_EQ(b[0].d, 0.0f);
  for (int i = 0; i < 32; i++) EXPECT_EQ(b[0].qs[i], 0);
  EXPECT_EQ(b[1].qs[8], 127);
}

TEST(ActivationQ8_K, NegativeMaxGivesPositiveIscale) {
  std::vector<float> x(256, 0.0f);
  x[0] = -2.0f;   // signed max -2: iscale = 63.5, d = 1/63.5
  x[1] = 1.0f;    // 63.5 -> 64 (tie, even)
  x[2] = 0.5f;    // 31.75 -> 32
  x[17] = -1.0f;  // -63.5 -> -64
  BlockQ8_K b{};
  quantize_activation(Type::Q8_K, x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f / 63.5f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 64);
  EXPECT_EQ(b.qs[2], 32);
  EXPECT_EQ(b.qs[17], -64);
  EXPECT_EQ(b.bsums[0], -127 + 64 + 32);
  EXPECT_EQ(b.bsums[1], -64);
  for (int j = 2; j < 16; j++) EXPECT_EQ(b.bsums[j], 0);
}

TEST(ActivationQ8_K, PositiveMaxMapsToMinus127AndFirstMaxWins) {
  std::vector<float> x(256, 0.0f);
  x[5] = 2.0f;   // first of two equal magnitudes: max = +2, iscale = -63.5
  x[6] = -2.0f;  // -> +127
  x[7] = 1.0f;   // -63.5 -> -64
  BlockQ8_K b{};
  quantize_activation(Type::Q8_K, x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f / -63.5f);
  EXPECT_EQ(b.qs[5], -127);
  EXPECT_EQ(b.qs[6], 127);
  EXPECT_EQ(b.qs[7], -64);
  EXPECT_EQ(b.bsums[0], -127 + 127 - 64);
}

TEST(ActivationQ8_K, ZeroBlockIsAllZero) {
  std::vector<float> x(256, 0.0f);
  BlockQ8_K b;
  std::memset(&b, 0x5a, sizeof(b));
  quantize_activation(Type::Q8_K, x.data(), &b, 256);
  EXPECT_EQ(b.d, 0.0f);
  for (int j = 0; j < 256; j++) EXPECT_EQ(b.qs[j], 0);
  for (int j = 0; j < 16; j++) EXPECT_EQ(b.bsums[j], 0);
}

TEST(ActivationLayout, RowBytesAndErrors) {
  EXPECT_EQ(act_row_bytes(Type::Q8_0, 64), 72u);
  EXPECT_EQ(act_row_bytes(Type::Q8_K, 512), 584u);
  EXPECT_EQ(act_row_bytes(Type::F32, 10), 40u);
  EXPECT_THROW(act_row_bytes(Type::Q2_K, 256), std::invalid_argument);
  EXPECT_THROW(act_row_bytes(Type::Q8_K, 100), std::invalid_argument);
  std::vector<float> x(100);
  std::vector<uint8_t> out(4096);
  EXPECT_THROW(quantize_activation(Type::Q8_0, x.data(), out.data(), 100), std::invalid_argument);
  EXPECT_EQ(traits(Type::Q2_K).vec_dot_type, Type::Q8_K);
  EXPECT_EQ(traits(Type::IQ2_XXS).vec_dot_type, Type::Q8_K);
  EXPECT_EQ(traits(Type::Q4_K).vec_dot_type, Type::Q8_K);
  EXPECT_EQ(traits(Type::Q8_0).vec_dot_type, Type::Q8_0);
  EXPECT_EQ(traits(Type::F16).vec_dot_type, Type::F32);
  EXPECT_THROW(dot(Type::Q8_K, out.data(), out.data(), 256, Isa::Scalar), std::invalid_argument);
  EXPECT_THROW(dot(Type::Q2_K, out.data(), out.data(), 100, Isa::Scalar), std::invalid_argument);
  EXPECT_THROW(traits(static_cast<Type>(77)), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::quant
