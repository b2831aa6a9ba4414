// cuda::gemm through its launcher on small shapes, every format (the tensor-core kernels of the
// quantized ones, the matvec fallback of F16), against the CPU and the matvec bit for bit
// (tools/cuda_check/gemm_compare.cpp). Small enough to run on the emulated driver too
// (cuda_emulated_gpu_tests), so the launch configuration of engine/cuda/gemm.cpp (kernel names,
// grid, threads, argument order) is checked on every machine; on a GPU, GemmGpu adds model shapes.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/cuda/gemm_test_support.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tools/cuda_check/gemm_compare.hpp"

namespace {
using ds4::quant::Type;

class GemmLaunch : public ::testing::TestWithParam<Type> {};

TEST_P(GemmLaunch, BitIdenticalToCpuAndToMatvec) {
  SKIP_WITHOUT_GPU();
  // n = 17 takes the 32-token kernels, n = 45 the 64-token ones; rows not a multiple of the tiles.
  const ds4::cuda_check::GemmShape shapes[] = {{13, 256, 17}, {70, 512, 45}};
  ds4::cuda::test::expect_gemm_bit_identical(GetParam(), shapes, 5);
}

INSTANTIATE_TEST_SUITE_P(Formats, GemmLaunch,
                         ::testing::Values(Type::Q8_0, Type::MXFP4, Type::Q4_K, Type::Q2_K, Type::IQ2_XXS, Type::F16),
                         [](const auto& i) { return std::string(ds4::quant::type_info(i.param).name); });

}  // namespace
