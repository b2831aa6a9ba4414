// The Fast order (docs/arithmetic.md §slices, §quantized-dot, §float-dot) checked against a
// second, independently written form of the documented operation sequence, on designed inputs
// where any other order gives other bits; and the two orders compared: Fast must differ from
// Exact somewhere (it is a different order) yet stay within rounding of the exact sum. Runs the
// kernels of every ISA this machine has (the generic reference included).
#include "engine/quant/fast_order.hpp"

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

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

std::vector<Isa> fast_isas() {
  std::vector<Isa> out;
  for (Isa isa : supported_isas())
    if (isa.order == Order::Fast || isa.arch == Arch::Generic) out.push_back(Isa{isa.arch, Order::Fast});
  return out;
}

// Slice s as the contract words it: blocks s, s + 8, s + 16, ...
TEST(FastOrder, BlockBGoesToSliceBMod8) {
  for (int64_t b = 0; b < 70; b++) EXPECT_EQ(fast::slice_of(b), int(b % 8)) << b;
  EXPECT_EQ(fast::slice_of(int64_t{1} << 40 | 5), 5);
}

// Q8_0 rows of 8, 16 and 12 blocks whose terms span 2^60: the serial sum, a different tree or a
// different slice assignment each round differently. The expectation is written from the
// document: per slice acc = fma(fl(dw*dx), float(isum), acc) in block order, then the tree.
TEST(FastOrder, Q8_0FollowsTheDocumentedSlicesAndTree) {
  for (int nb : {8, 16, 12}) {
    std::vector<BlockQ8_0> w(static_cast<size_t>(nb));
    std::vector<BlockQ8_0Act> x(static_cast<size_t>(nb));
    std::mt19937 rng(7 + nb);
    for (int b = 0; b < nb; b++) {
      w[size_t(b)].d = f32_to_f16(std::ldexp(1.0f, (b * 5) % 13 - 6) * (b % 3 == 0 ? -1.0f : 1.0f));
      x[size_t(b)].d = std::ldexp(1.0f + 0.125f * float(b), (b * 7) % 11 - 5);
      for (int j = 0; j < 32; j++) {
        w[size_t(b)].qs[j] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
        x[size_t(b)].qs[j] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
      }
    }
    float part[8];
    for (int s = 0; s < 8; s++) {
      float acc = 0.0f;
      for (int b = s; b < nb; b += 8) {
        int32_t isum = 0;
        for (int j = 0; j < 32; j++) isum += int32_t(w[size_t(b)].qs[j]) * int32_t(x[size_t(b)].qs[j]);
        acc = std::fma(f16_to_f32(w[size_t(b)].d) * x[size_t(b)].d, static_cast<float>(isum), acc);
      }
      part[s] = acc;
    }
    const float want = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (Isa isa : fast_isas()) {
      const float got = dot(Type::Q8_0, w.data(), x.data(), nb * 32, isa);
      EXPECT_TRUE(same_bits(got, want)) << isa_name(isa) << " nb " << nb << ": " << got << " vs " << want;
    }
  }
}

// An F32 row whose products cancel at every level: the halving tree of each 32-block (i with
// i+16, 8, 4, 2, 1), the slices and the slice tree, written out independently.
TEST(FastOrder, FloatDotFollowsTheBlockTreeAndSlices) {
  for (int64_t n : {32, 256, 300, 1000}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(n)), x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) {
      w[size_t(i)] = std::ldexp(u(rng), static_cast<int>(rng() % 40) - 20);
      x[size_t(i)] = u(rng);
    }
    const int64_t nb = (n + 31) / 32;
    auto block_value = [&](int64_t b) {
      std::vector<float> p(32, 0.0f);
      for (int64_t i = 0; i < 32 && b * 32 + i < n; i++) p[size_t(i)] = w[size_t(b * 32 + i)] * x[size_t(b * 32 + i)];
      for (size_t h = 16; h >= 1; h /= 2)
        for (size_t i = 0; i < h; i++) p[i] = p[i] + p[i + h];
      return p[0];
    };
    float part[8];
    for (int s = 0; s < 8; s++) {
      part[s] = 0.0f;
      for (int64_t b = s; b < nb; b += 8) part[s] = part[s] + block_value(b);
    }
    const float want = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (Isa isa : fast_isas()) {
      const float got = dot(Type::F32, w.data(), x.data(), n, isa);
      EXPECT_TRUE(same_bits(got, want)) << isa_name(isa) << " n " << n << ": " << got << " vs " << want;
    }
  }
}

// Random 4096-column rows of every weight format: Fast and Exact are different orders, so some
// results must differ; both stay within a few roundings of the exact real sum of the terms.
class FastVsExact : public ::testing::TestWithParam<Type> {};

TEST_P(FastVsExact, DifferentOrderWithinRounding) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  const int64_t n = 4096;
  std::mt19937 rng(11 + static_cast<int>(type));
  std::student_t_distribution<float> heavy(3.0f);
  int differ = 0;
  for (int trial = 0; trial < 50; trial++) {
    std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
    for (float& v : wf) v = heavy(rng);
    for (float& v : xf) v = heavy(rng);
    std::vector<uint8_t> w(row_bytes(type, uint64_t(n))), a(act_row_bytes(t.vec_dot_type, n));
    quantize_row(type, wf.data(), w.data(), n, nullptr);
    quantize_activation(t.vec_dot_type, xf.data(), a.data(), n, Isa::Scalar);
    // The exact real value of the computed terms: dequantized weights times dequantized
    // activations, in double (the float steps' only error is rounding).
    std::vector<float> wd(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
    t.dequantize(w.data(), wd.data(), n);
    if (t.vec_dot_type == Type::Q8_0) {  // the activation layout keeps an f32 scale
      const auto* xb = reinterpret_cast<const BlockQ8_0Act*>(a.data());
      for (int64_t i = 0; i < n; i++) xd[size_t(i)] = xb[i / 32].d * float(xb[i / 32].qs[i % 32]);
    } else {
      traits(t.vec_dot_type).dequantize(a.data(), xd.data(), n);
    }
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
      exact += double(wd[size_t(i)]) * double(xd[size_t(i)]);
      mag += std::fabs(double(wd[size_t(i)]) * double(xd[size_t(i)]));
    }
    const float f = dot(type, w.data(), a.data(), n, Isa{Arch::Generic, Order::Fast});
    const float e = dot(type, w.data(), a.data(), n, Isa::Scalar);
    differ += same_bits(f, e) ? 0 : 1;
    EXPECT_NEAR(f, exact, 1e-5 * mag) << "trial " << trial;
    EXPECT_NEAR(e, exact, 1e-5 * mag) << "trial " << trial;
  }
  EXPECT_GT(differ, 0) << "Fast gave Exact's bits on all 50 rows: it is not a different order";
}

INSTANTIATE_TEST_SUITE_P(Formats, FastVsExact,
                         ::testing::Values(Type::Q8_0, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::MXFP4, Type::F16,
                                           Type::BF16, Type::F32),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

}  // namespace
}  // namespace ds4::quant
