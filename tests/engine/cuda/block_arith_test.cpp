// The per-element arithmetic shared by the generic CPU dots and the CUDA kernels
// (engine/quant/block_arith.hpp): the half decode against an independent formula for all 65536
// inputs, the Q8_0 term's multiplication order, and the generic dots being exactly the chain of
// shared steps (so a change to either side shows here, on a machine without a GPU).
#include "engine/quant/block_arith.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/iq2_tables.hpp"
#include "engine/quant/quant.hpp"
#include "engine/quant/table_lookup.hpp"

namespace {
namespace arith = ds4::quant::arith;
using ds4::quant::Isa;
using ds4::quant::Type;

float half_by_formula(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float s = (h & 0x8000) != 0 ? -1.0f : 1.0f;
  if (e == 0) return s * std::ldexp(static_cast<float>(m), -24);
  if (e == 31) return m == 0 ? s * INFINITY : NAN;
  return s * std::ldexp(static_cast<float>(1024 + m), e - 25);
}

TEST(BlockArith, HalfDecodeMatchesFormulaForEveryInput) {
  for (uint32_t h = 0; h < 65536; h++) {
    const float got = arith::f16_to_f32(static_cast<uint16_t>(h));
    const float want = half_by_formula(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      // the payload is kept: quiet bit and mantissa shifted into place
      ASSERT_EQ(std::bit_cast<uint32_t>(got) & 0x7fffffu, (h & 1023u) << 13) << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << h;
    }
  }
}

TEST(BlockArith, Q8_0TermMultipliesScalesFirst) {
  // (wd * xd) * isum and wd * (xd * isum) differ for these values; the CPU order is the first.
  const uint16_t wd = 0x3555;  // 0.33325195
  const float xd = 0.1f;
  const int32_t isum = 777;
  const float want = (arith::f16_to_f32(wd) * xd) * static_cast<float>(isum);
  const float other = arith::f16_to_f32(wd) * (xd * static_cast<float>(isum));
  ASSERT_NE(std::bit_cast<uint32_t>(want), std::bit_cast<uint32_t>(other)) << "pick values where the orders differ";
  EXPECT_EQ(std::bit_cast<uint32_t>(arith::q8_0_block_term(wd, xd, isum)), std::bit_cast<uint32_t>(want));
}

TEST(BlockArith, GenericDotsAreTheChainOfSharedSteps) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t n = 32 * 40;
  std::vector<float> w(n), x(n);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng) * 3.0f;
  // F16: index order, term = f16(w) * x.
  std::vector<uint16_t> wh(n);
  ds4::quant::quantize_row(Type::F16, w.data(), wh.data(), n, nullptr);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++) acc = arith::accumulate(acc, arith::f16_term(wh[i], x[i]));
  EXPECT_EQ(std::bit_cast<uint32_t>(ds4::quant::dot(Type::F16, wh.data(), x.data(), n, Isa::Scalar)),
            std::bit_cast<uint32_t>(acc));
  // Q8_0: block order, term = (f16(w.d) * x.d) * isum.
  std::vector<uint8_t> wq(ds4::quant::row_bytes(Type::Q8_0, n)), xq(ds4::quant::act_row_bytes(Type::Q8_0, n));
  ds4::quant::quantize_row(Type::Q8_0, w.data(), wq.data(), n, nullptr);
  ds4::quant::quantize_activation(Type::Q8_0, x.data(), xq.data(), n);
  acc = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    uint16_t wd;
    float xd;
    std::memcpy(&wd, wq.data() + 34 * b, 2);
    std::memcpy(&xd, xq.data() + 36 * b, 4);
    const auto* wqs = reinterpret_cast<const int8_t*>(wq.data() + 34 * b + 2);
    const auto* xqs = reinterpret_cast<const int8_t*>(xq.data() + 36 * b + 4);
    acc = arith::accumulate(acc, arith::q8_0_block_term(wd, xd, arith::q8_0_block_isum(wqs, xqs)));
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(ds4::quant::dot(Type::Q8_0, wq.data(), xq.data(), n, Isa::Scalar)),
            std::bit_cast<uint32_t>(acc));
}

// The look-ups the integer block sums make (engine/quant/table_lookup.hpp): the computed IQ2
// sign pattern against the host table for all 128 inputs, and the host side of the others.
TEST(BlockArith, TableLookupsMatchTheHostTables) {
  namespace detail = ds4::quant::detail;
  for (uint32_t i = 0; i < 128; i++) EXPECT_EQ(detail::iq2_sign_mask(i), detail::kIq2Signs.mask[i]) << i;
  for (uint32_t g = 0; g < 256; g++) EXPECT_EQ(detail::iq2xxs_grid(g), detail::kIq2xxsGrid[g]) << g;
  const int8_t mx[16] = {DS4_MXFP4_VALUES};
  for (uint32_t q = 0; q < 16; q++) EXPECT_EQ(detail::mxfp4_value(q), mx[q]) << q;
  EXPECT_EQ(detail::mxfp4_value(7), 12);
  EXPECT_EQ(detail::mxfp4_value(15), -12);
}

}  // namespace
