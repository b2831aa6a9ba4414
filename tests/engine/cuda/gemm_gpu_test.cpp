// The prefill GEMM on the device (engine/cuda/gemm.hpp) against the generic CPU Fast dot and the
// device matvec per 8 activation rows, bit for bit (tools/cuda_check/gemm_compare.cpp): every
// quantized format on its tensor-core kernel, F16 and BF16 through the matvec fallback. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/gemm.hpp"
#include "tests/engine/cuda/gemm_test_support.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tools/cuda_check/gemm_compare.hpp"

namespace {
using ds4::quant::Type;

class GemmGpu : public ::testing::TestWithParam<Type> {};

TEST_P(GemmGpu, BitIdenticalToCpuAndToMatvec) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::test::expect_gemm_bit_identical(GetParam(), ds4::cuda_check::kGemmShapes, 11);
}

INSTANTIATE_TEST_SUITE_P(Formats, GemmGpu,
                         ::testing::Values(Type::Q8_0, Type::MXFP4, Type::Q4_K, Type::Q2_K, Type::IQ2_XXS, Type::F16,
                                           Type::BF16),
                         [](const auto& i) { return std::string(ds4::quant::type_info(i.param).name); });

TEST(GemmGpuArgs, RejectsBadWidthsAndSmallBuffers) {
  SKIP_WITHOUT_GPU();
  std::vector<uint8_t> q(34);
  const auto dw = ds4::cuda::upload_weight(Type::Q8_0, q.data(), 1, 32);
  EXPECT_TRUE(ds4::cuda::gemm_uses_tensor_cores(dw, 9));
  EXPECT_FALSE(ds4::cuda::gemm_uses_tensor_cores(dw, 8));
  ds4::cuda::DeviceBuffer act(36 * 9), out(4 * 9);
  EXPECT_THROW(ds4::cuda::gemm(dw, act, 36, 0, out), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::gemm(dw, act, 36, 10, out), std::invalid_argument);  // act too small
  EXPECT_THROW(ds4::cuda::gemm(dw, act, 34, 9, out), std::invalid_argument);   // stride
}

}  // namespace
