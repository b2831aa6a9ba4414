// The device's RoPE rotation (kernels/rope.cuh) against the CPU's rope_apply
// (engine/model/rope.cpp), bit for bit, with the cos/sin tables of the CPU's Fast rope_angles:
// plain and YaRN layers, forward and inverse, positions up to 10^6, one table per row, 1..3 and
// 64 heads, a partial and a full rotary width. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/rope.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/rope.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/stage_cases.hpp"

namespace {
using namespace ds4::cuda::test;

TEST(RopeGpu, MatchesTheCpuRotationBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  for_each_rope_case(rng, [](const RopeCase& c) {
    auto dx = upload(c.x), dcs = upload(c.cs);
    ds4::cuda::rope(dx, dcs, c.T, int32_t(c.H), int32_t(c.head_dim), int32_t(c.n_rot));
    EXPECT_EQ(first_difference(download(dx, c.x.size()), c.want), "")
        << "head_dim " << c.head_dim << ", layer " << c.layer << (c.inverse ? ", inverse" : "") << ", " << c.H
        << " heads";
  });
}

TEST(RopeGpu, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer x(512 * 4), cs(64 * 4);
  EXPECT_THROW(ds4::cuda::rope(x, cs, 1, 1, 512, 63), std::invalid_argument);  // odd rotary width
  EXPECT_THROW(ds4::cuda::rope(x, cs, 2, 1, 512, 64), std::invalid_argument);  // two rows in one row's buffers
  EXPECT_THROW(ds4::cuda::rope(x, cs, 1, 1, 32, 64), std::invalid_argument);   // n_rot > head_dim
}

}  // namespace
