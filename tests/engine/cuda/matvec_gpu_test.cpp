// The device matvec kernels against the generic CPU Fast dot (docs/arithmetic.md), bit for
// bit, widths 1..8 (tools/cuda_check/matvec_compare.cpp does the comparing). Skips with the
// reason where no GPU is usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/matvec.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace {
using ds4::quant::Type;

class MatvecGpu : public ::testing::TestWithParam<Type> {};

TEST_P(MatvecGpu, BitIdenticalToGenericCpuFastDot) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = 1;
  for (const auto& s : ds4::cuda_check::kShapes) {
    if (ds4::cuda::test::on_emulator() && s.rows > 200) continue;  // the others keep every tail
    const auto r = ds4::cuda_check::compare_matvec(GetParam(), s.rows, ds4::cuda_check::shape_cols(GetParam(), s),
                                                   s.special, seed++);
    EXPECT_EQ(r.compared, static_cast<uint64_t>(s.rows) * 36);  // widths 1..8: 1+2+...+8 rows each
    EXPECT_EQ(r.mismatched, 0u) << r.first_mismatch;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, MatvecGpu,
                         ::testing::Values(Type::Q8_0, Type::F16, Type::BF16, Type::F32, Type::MXFP4, Type::Q2_K,
                                           Type::Q4_K, Type::IQ2_XXS),
                         [](const auto& i) { return std::string(ds4::quant::type_info(i.param).name); });

TEST(MatvecGpuArgs, RejectsFormatsWithoutAKernelAndBadWidths) {
  SKIP_WITHOUT_GPU();
  std::vector<uint8_t> w(ds4::quant::row_bytes(Type::Q8_K, 256));
  EXPECT_THROW(ds4::cuda::upload_weight(Type::Q8_K, w.data(), 1, 256), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::upload_weight(Type::Q4_K, w.data(), 1, 128), std::invalid_argument);  // half a block
  std::vector<uint8_t> q(34);
  const auto dw = ds4::cuda::upload_weight(Type::Q8_0, q.data(), 1, 32);
  ds4::cuda::DeviceBuffer act(36 * 9), out(4 * 9);
  EXPECT_THROW(ds4::cuda::matvec(dw, act, 36, 9, out), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::matvec(dw, act, 36, 0, out), std::invalid_argument);
}

}  // namespace
