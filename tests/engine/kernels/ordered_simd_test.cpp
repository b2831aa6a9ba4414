// Order-preserving SIMD kernels (engine/kernels/ordered_simd.hpp) against their sequential
// references, bit for bit: the F16 matvec against the F16 format's scalar dot row by row, the
// lane-wise dots against one sequential f32 sum per lane, axpy against the elementwise loop.
// Shapes cover partial 8-row tiles, columns that are not a multiple of 8, a row range that does
// not start at 0, and more than 64 lanes (the kernel walks lanes in groups of 64). The multi-row
// F16 matvec, the architecture's and the generic one, against the single-row kernel for 1..9
// activation rows (past one 8-row group) with padded strides.
#include "engine/kernels/ordered_simd.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/arch/kernel_ops.hpp"
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
            quant::cpu_kernels(quant::Type::F16, quant::Arch::Generic).dot_exact(W.data() + r * cols, x.data(), cols);
        ASSERT_TRUE(same_bits(out[size_t(r - r0)], ref))
            << "cols " << cols << " row " << r << ": " << out[size_t(r - r0)] << " vs " << ref;
      }
    }
  }
}

// Each output of the multi-row matvec (through the dispatcher, which runs this machine's
// architecture, and the generic one directly) has the single-row kernel's bits. Inputs span
// magnitudes so that any change in the order of the adds changes some result's bits.
TEST(OrderedSimd, F16MatvecRowsMultiMatchesOneRowAtATime) {
  std::mt19937 rng(14);
  const quant::Traits& f16 = quant::traits(quant::Type::F16);
  using MultiFn = void (*)(const uint16_t*, int64_t, int64_t, int64_t, const float*, size_t, int, float*, size_t);
  const MultiFn generic_multi = [](const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t xs,
                                   int n_x, float* out, size_t os) {
    for (int t0 = 0; t0 < n_x; t0 += ordered::kMultiRows)
      detail::kOrderedGeneric.f16_matvec_rows_multi(W, cols, r0, r1, x + size_t(t0) * xs, xs,
                                                    std::min(ordered::kMultiRows, n_x - t0), out + size_t(t0) * os, os);
  };
  for (int64_t cols : {1, 7, 8, 13, 64, 203}) {
    const int64_t rows = 29;
    std::vector<float> wf = normal(size_t(rows * cols), 0.7f, rng);
    for (size_t i = 0; i < wf.size(); i += 5) wf[i] *= 300.0f;
    std::vector<uint16_t> W(wf.size());
    f16.quantize(wf.data(), W.data(), int64_t(wf.size()));
    for (int n_x = 1; n_x <= 9; n_x++) {
      const size_t xs = size_t(cols) + 3, os = size_t(rows) + 5;  // padded strides
      std::vector<float> x = normal(xs * size_t(n_x), 1.3f, rng);
      for (size_t i = 1; i < x.size(); i += 7) x[i] *= 1e-3f;
      for (int64_t r0 : {0, 3}) {
        for (const MultiFn multi : {MultiFn(ordered::f16_matvec_rows_multi), generic_multi}) {
          std::vector<float> out(os * size_t(n_x), -1.0f);
          multi(W.data(), cols, r0, rows, x.data(), xs, n_x, out.data(), os);
          for (int t = 0; t < n_x; t++) {
            std::vector<float> one(size_t(rows - r0));
            ordered::f16_matvec_rows(W.data(), cols, r0, rows, x.data() + size_t(t) * xs, one.data());
            for (int64_t r = r0; r < rows; r++) {
              const float got = out[size_t(t) * os + size_t(r - r0)], want = one[size_t(r - r0)];
              ASSERT_TRUE(same_bits(got, want))
                  << (multi == generic_multi ? "generic" : "dispatched") << " cols " << cols << " n_x " << n_x
                  << " row " << t << " weight row " << r << ": " << got << " vs " << want;
            }
          }
        }
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
