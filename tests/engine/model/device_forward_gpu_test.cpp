// The whole DS4 forward on the device (engine/model/device/device_forward.cpp) on the real
// ds4-tiny model against the CPU's forward_batch in Fast mode, logits bit for bit: a 12-token
// prefill from position 0 on the device (the GEMM path), a context prefilled on the CPU continuing on the device
// (decode, then a 4-token verify with every row's logits), and the device's state moved back to the CPU continuing
// there. Skips with the reason where no GPU is usable; model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/model/device/device_forward.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {
using test::device::first_difference;

constexpr uint32_t kCapacity = 128;

struct Cpu {
  const Model::Impl& m;
  std::vector<model::LayerState> layers;
  model::ForwardScratch s;
  explicit Cpu(const Model::Impl& m_) : m(m_), layers(model::make_layer_states(m_.cfg, kCapacity, 0)) {}
  std::vector<float> run(const std::vector<int32_t>& tokens, uint32_t pos0, bool all) {
    std::vector<float> logits((all ? tokens.size() : 1) * m.cfg.n_vocab);
    model::forward_batch(m, layers, tokens.data(), int(tokens.size()), pos0, all, logits.data(), s, {}, nullptr);
    return logits;
  }
};

// The passes of a device forward over weights placed by the test (the model itself is the CPU's).
model::ScratchPool<model::device::DevicePass> passes_over(const Model::Impl& m,
                                                          const model::device::DeviceWeights& dw) {
  return model::ScratchPool<model::device::DevicePass>(
      [&m, &dw] { return std::make_unique<model::device::DevicePass>(m, dw); });
}

std::vector<float> on_device(model::device::DeviceForward& d, const Model::Impl& m, const std::vector<int32_t>& tokens,
                             uint32_t pos0, bool all) {
  std::vector<float> logits((all ? tokens.size() : 1) * m.cfg.n_vocab);
  d.forward(tokens.data(), int(tokens.size()), pos0, all, logits.data());
  return logits;
}

TEST(DeviceForwardGpu, PrefillFromTheStartMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  Cpu cpu(m);
  const model::device::DeviceWeights dw(m.file.base(), m.file.size(), cuda::WeightPlacement::InPlace);
  auto passes = passes_over(m, dw);
  model::device::DeviceForward dev(m, passes, cpu.layers);
  // 12 rows: the projections take the tensor-core GEMM (more than 8 rows).
  const std::vector<int32_t> prompt = {1, 17, 300, 5, 999, 42, 7, 8, 1000, 64, 3, 511};
  EXPECT_EQ(first_difference(on_device(dev, m, prompt, 0, true), cpu.run(prompt, 0, true)), "");
  const std::vector<int32_t> bad = {3, int32_t(m.cfg.n_vocab)};
  EXPECT_THROW(on_device(dev, m, bad, 12, false), std::out_of_range);
}

TEST(DeviceForwardGpu, ContextMovesBetweenCpuAndDeviceAndContinuesExactly) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  std::mt19937 rng(30);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(m.cfg.n_vocab) - 1);
  std::vector<int32_t> prompt(40);
  for (int32_t& t : prompt) t = tok(rng);
  Cpu cpu(m);
  cpu.run(prompt, 0, false);  // 40 rows: the ratio-4 layers' indexer chooses from 10
  const model::device::DeviceWeights dw(m.file.base(), m.file.size(), cuda::WeightPlacement::Copied);
  auto passes = passes_over(m, dw);
  model::device::DeviceForward dev(m, passes, cpu.layers);
  dev.upload_state(cpu.layers);
  uint32_t pos = 40;
  for (int step = 0; step < 2; step++, pos++) {
    const std::vector<int32_t> next = {tok(rng)};
    EXPECT_EQ(first_difference(on_device(dev, m, next, pos, false), cpu.run(next, pos, false)), "") << "decode " << pos;
  }
  const std::vector<int32_t> verify = {tok(rng), tok(rng), tok(rng), tok(rng)};
  EXPECT_EQ(first_difference(on_device(dev, m, verify, pos, true), cpu.run(verify, pos, true)), "") << "verify";
  pos += 4;
  // The device's state back on the CPU: a second CPU context continues from it like the first.
  Cpu moved(m);
  dev.download_state(moved.layers);
  const std::vector<int32_t> after = {tok(rng)};
  EXPECT_EQ(first_difference(moved.run(after, pos, false), cpu.run(after, pos, false)), "") << "after the move back";
}

}  // namespace
}  // namespace ds4
