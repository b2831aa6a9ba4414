// The bandwidth probes behind `ds4ctl bench`: they run, return a finite positive rate, and
// reject types without a weight dot. (Correctness only; the rates themselves are not checked.)
#include "toolchain/bench/kernel_bench.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace ds4::kernels {
namespace {

TEST(KernelBench, InCacheDotRateIsFinitePositive) {
  ThreadPool pool(1);
  const double gbs = measure_dot_gbs(quant::Type::Q2_K, true, pool, quant::best_isa());
  EXPECT_TRUE(std::isfinite(gbs));
  EXPECT_GT(gbs, 0.0);
}

TEST(KernelBench, BenchMatrixHasRequestedShape) {
  const BenchMatrix m = make_bench_matrix(quant::Type::IQ2_XXS, kBenchCacheBytes);
  EXPECT_EQ(m.view.cols, 4096);
  EXPECT_EQ(m.weights.size(), static_cast<size_t>(m.view.rows) * weight_row_bytes(m.view));
  EXPECT_LE(m.weights.size(), kBenchCacheBytes);
  EXPECT_GT(m.weights.size(), kBenchCacheBytes - weight_row_bytes(m.view));
  EXPECT_EQ(m.act.size(), quant::act_row_bytes(quant::Type::Q8_K, 4096));
}

TEST(KernelBench, RejectsActivationOnlyType) {
  ThreadPool pool(1);
  EXPECT_THROW(measure_dot_gbs(quant::Type::Q8_K, true, pool, quant::Isa::Scalar), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::kernels
