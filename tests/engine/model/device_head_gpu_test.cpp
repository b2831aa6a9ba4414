// The device forward's pieces on the real ds4-tiny weights (engine/model/device/), against the CPU
// Fast functions bit for bit: the weight table in both placements (in place through a
// registration of the mapping, and one device copy), and the output head for T = 1, 3 and 9 rows
// (9: the LM head's matvec runs in two groups). Skips with the reason where no GPU is usable;
// model_device_emulated_tests runs the same source on the CUDA-thread emulator.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_head.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model.hpp"
#include "engine/model/model_impl.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {

using test::device::first_difference;

TEST(DeviceWeightsGpu, TensorsAreWhereTheMappingPutsThemInBothPlacements) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  const model::Tensor& t = m.w.layers[0].attn_norm;  // F32, n_embd values
  for (const auto placement : {cuda::WeightPlacement::InPlace, cuda::WeightPlacement::Copied}) {
    const model::device::DeviceWeights dw(m.file.base(), m.file.size(), placement);
    std::vector<float> got(t.ne[0]);
    dw.at(t).download(got.data(), got.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(got.data(), t.data, t.bytes), 0) << cuda::placement_name(placement);
    model::Tensor outside = t;
    outside.data = reinterpret_cast<const uint8_t*>(m.file.base()) + m.file.size() - 4;
    EXPECT_THROW(dw.at(outside), std::out_of_range);
    EXPECT_THROW(dw.expert(m.w.layers[0].ffn_gate_exps, int64_t(m.cfg.n_expert)), std::out_of_range);
  }
  EXPECT_THROW(model::device::DeviceWeights(m.file.base(), m.file.size(), cuda::WeightPlacement::DoesNotFit),
               std::invalid_argument);
}

TEST(DeviceHeadGpu, OutputHeadMatchesTheCpuFastHeadBitForBit) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  const model::ModelConfig& cfg = m.cfg;
  std::mt19937 rng(30);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto placement : {cuda::WeightPlacement::InPlace, cuda::WeightPlacement::Copied}) {
    const model::device::DeviceWeights dw(m.file.base(), m.file.size(), placement);
    model::device::HeadScratch s;
    for (int T : {1, 3, 9}) {
      std::vector<float> H(size_t(T) * cfg.hc_dim()), want(size_t(T) * cfg.n_vocab), got(want.size());
      for (float& v : H) v = nd(rng);
      model::HeadScratch cpu;
      model::output_head(m.ex, cfg, m.w, H.data(), T, want.data(), cpu);
      cuda::DeviceBuffer dH(H.size() * sizeof(float)), dlogits(got.size() * sizeof(float));
      dH.upload(H.data(), H.size() * sizeof(float));
      model::device::output_head(dw, cfg, model::head_weights(m.w), dH, T, dlogits, s);
      dlogits.download(got.data(), got.size() * sizeof(float));
      EXPECT_EQ(first_difference(got, want), "") << cuda::placement_name(placement) << ", T " << T;
    }
  }
}

}  // namespace
}  // namespace ds4
