// The device's RMSNorm (kernels/rms_norm.cuh) against the CPU's Fast RMSNorm
// (engine/model/rms_norm.cpp, ex.exact = false), bit for bit: several widths (a multiple of 256,
// a multiple of 32 but not of 256, short last blocks, one element), 1 and 3 rows, with and
// without the weight, in place. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/rms_norm.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace {
using namespace ds4::cuda::test;

TEST(RmsNormGpu, MatchesTheCpuFastOrderBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  ds4::model::Exec ex;
  ex.exact = false;
  ex.isa = ds4::quant::best_isa();
  constexpr float kEps = 1e-6f;
  for (int64_t n : {512, 4096, 7168, 96, 100, 33, 1, 1000})
    for (int64_t rows : {1, 3}) {
      const auto x = randn(rng, size_t(rows * n), 2.0f), w = randn(rng, size_t(n), 1.0f);
      std::vector<float> want(x.size()), want_nw(x.size());
      for (int64_t t = 0; t < rows; t++) {
        ds4::model::rms_norm(ex, want.data() + t * n, x.data() + t * n, w.data(), uint64_t(n), kEps);
        ds4::model::rms_norm(ex, want_nw.data() + t * n, x.data() + t * n, nullptr, uint64_t(n), kEps);
      }
      auto dx = upload(x), dw = upload(w);
      ds4::cuda::DeviceBuffer dout(x.size() * sizeof(float));
      ds4::cuda::rms_norm(dx, dw, dout, rows, n, kEps);
      EXPECT_EQ(first_difference(download(dout, x.size()), want), "") << "n " << n << ", " << rows << " rows";
      ds4::cuda::rms_norm(dx, {}, dx, rows, n, kEps);  // in place, no weight
      EXPECT_EQ(first_difference(download(dx, x.size()), want_nw), "")
          << "no weight, n " << n << ", " << rows << " rows";
    }
}

TEST(RmsNormGpu, RejectsBuffersTooSmall) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer x(64 * sizeof(float)), w(16 * sizeof(float));
  EXPECT_THROW(ds4::cuda::rms_norm(x, w, x, 2, 32, 1e-6f), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::rms_norm(x, {}, x, 3, 32, 1e-6f), std::invalid_argument);
}

}  // namespace
