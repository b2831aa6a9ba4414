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
  const std::vector<uint32_t> positions = {0, 1, 77, 4096, 65535, 1000000};
  const int64_t T = int64_t(positions.size());
  for (auto [head_dim, n_rot] : {std::pair{512u, 64u}, std::pair{96u, 96u}})
    for (uint32_t layer : {0u, 1u})
      for (bool inverse : {false, true})
        for (uint32_t H : {1u, 3u, 64u}) {
          const ds4::model::RopeParams p = ds4::model::rope_params_for_layer(rope_config(head_dim, n_rot), layer);
          const auto x = randn(rng, size_t(T) * H * head_dim, 1.0f);
          std::vector<float> want = x, cs(size_t(T) * n_rot);
          for (int64_t t = 0; t < T; t++) {
            ds4::model::rope_angles(p, positions[t], inverse, false, cs.data() + t * n_rot);
            ds4::model::rope_apply(want.data() + t * H * head_dim, H, head_dim, n_rot, cs.data() + t * n_rot);
          }
          auto dx = upload(x), dcs = upload(cs);
          ds4::cuda::rope(dx, dcs, T, int32_t(H), int32_t(head_dim), int32_t(n_rot));
          EXPECT_EQ(first_difference(download(dx, x.size()), want), "")
              << "head_dim " << head_dim << ", layer " << layer << (inverse ? ", inverse" : "") << ", " << H
              << " heads";
        }
}

TEST(RopeGpu, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer x(512 * 4), cs(64 * 4);
  EXPECT_THROW(ds4::cuda::rope(x, cs, 1, 1, 512, 63), std::invalid_argument);  // odd rotary width
  EXPECT_THROW(ds4::cuda::rope(x, cs, 2, 1, 512, 64), std::invalid_argument);  // two rows in one row's buffers
  EXPECT_THROW(ds4::cuda::rope(x, cs, 1, 1, 32, 64), std::invalid_argument);   // n_rot > head_dim
}

}  // namespace
