// FP8/FP4/Hadamard simulations on hand-computed values, ties included.
#include "engine/quant/fp_sim.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace ds4::quant {
namespace {

TEST(E4M3, NearestWithUpperTieOnlyToEvenCode) {
  EXPECT_EQ(e4m3fn_round(1.0f), 1.0f);
  EXPECT_EQ(e4m3fn_round(1.0625f), 1.0f);   // tie 1.0 (code 56) / 1.125 (57): stay
  EXPECT_EQ(e4m3fn_round(1.1875f), 1.25f);  // tie 1.125 (57) / 1.25 (58): up to even
  EXPECT_EQ(e4m3fn_round(-1.1875f), -1.25f);
  EXPECT_EQ(e4m3fn_round(1.07f), 1.125f);
  EXPECT_EQ(e4m3fn_round(0.0009765625f), 0.0f);         // half of the smallest subnormal 2^-9
  EXPECT_EQ(e4m3fn_round(0.0029296875f), 0.00390625f);  // 1.5 * 2^-9 -> 2 * 2^-9
  EXPECT_EQ(e4m3fn_round(250.0f), 256.0f);
  EXPECT_EQ(e4m3fn_round(448.0f), 448.0f);
  EXPECT_EQ(e4m3fn_round(1000.0f), 448.0f);
  EXPECT_EQ(e4m3fn_round(-1000.0f), -448.0f);
}

TEST(Fp8Block, PowerOfTwoScaleFromAmax) {
  std::vector<float> x(64, 0.0f);
  x[0] = 448.0f;  // scale 2^ceil(log2(1)) = 1
  x[1] = 1.0625f;
  x[2] = 1.1875f;
  fp8_e4m3_simulate_block64(x.data());
  EXPECT_EQ(x[0], 448.0f);
  EXPECT_EQ(x[1], 1.0f);
  EXPECT_EQ(x[2], 1.25f);

  std::vector<float> y(64, 0.0f);
  y[0] = 500.0f;  // scale 2: 250 -> 256 -> 512
  y[1] = 2.125f;  // 1.0625 -> 1.0 -> 2
  fp8_e4m3_simulate_block64(y.data());
  EXPECT_EQ(y[0], 512.0f);
  EXPECT_EQ(y[1], 2.0f);

  std::vector<float> z(128, 0.0f);  // all-zero blocks stay zero (amax floor 1e-4)
  fp8_kv_simulate_row(z.data(), 128);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  EXPECT_THROW(fp8_kv_simulate_row(z.data(), 100), std::invalid_argument);
}

TEST(E2M1, TiesToEvenIndex) {
  const float in[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 5.5f, 7.0f, -5.0f, -0.75f, 0.3f};
  const float want[] = {0.0f, 1.0f, 1.0f, 2.0f, 2.0f, 4.0f, 4.0f, 6.0f, 6.0f, -4.0f, -1.0f, 0.5f};
  for (size_t i = 0; i < std::size(in); i++) EXPECT_EQ(e2m1_round(in[i]), want[i]) << in[i];
}

TEST(Fp4Block, ScaleAndSnap) {
  std::vector<float> x(32, 0.0f);
  x[0] = 12.0f;  // amax 12: scale 2^ceil(log2(2)) = 2
  x[1] = 7.0f;   // 3.5 -> 4 -> 8
  x[2] = 5.0f;   // 2.5 -> 2 -> 4
  x[3] = -0.5f;  // -0.25 -> -0 -> -0
  fp4_e2m1_simulate_block32(x.data());
  EXPECT_EQ(x[0], 12.0f);
  EXPECT_EQ(x[1], 8.0f);
  EXPECT_EQ(x[2], 4.0f);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_TRUE(std::signbit(x[3]));
  EXPECT_THROW(fp4_simulate_row(x.data(), 31), std::invalid_argument);
}

TEST(Hadamard, BasisVectorsAndOnes) {
  std::vector<float> e(128, 0.0f);
  e[0] = 1.0f;
  hadamard128(e.data());
  for (float v : e) EXPECT_EQ(v, 0.08838834764831845f);

  std::vector<float> ones(128, 1.0f);
  hadamard128(ones.data());
  EXPECT_EQ(ones[0], 128.0f * 0.08838834764831845f);
  for (int i = 1; i < 128; i++) EXPECT_EQ(ones[i], 0.0f);

  std::vector<float> e1(128, 0.0f);  // row 1 of the Sylvester matrix alternates signs
  e1[1] = 1.0f;
  hadamard128(e1.data());
  for (int i = 0; i < 128; i++) EXPECT_EQ(e1[i], (i % 2 ? -1.0f : 1.0f) * 0.08838834764831845f) << i;
}

TEST(IndexerQat, HadamardThenFp4) {
  std::vector<float> x(128, 0.0f);
  x[0] = 1.0f;  // -> all 0.0884; per block amax 0.0884, scale 2^ceil(log2(0.0147)) = 2^-6
  indexer_qat_row(x.data());
  // 0.0884 / 2^-6 = 5.657 -> nearest E2M1 is 6 -> 6 * 2^-6
  for (float v : x) EXPECT_EQ(v, 6.0f / 64.0f);
}

}  // namespace
}  // namespace ds4::quant
