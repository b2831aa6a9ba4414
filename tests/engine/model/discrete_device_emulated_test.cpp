// The CUDA backend on a discrete device (an H100 or H200, not a GB10): the weights copied to its
// memory rather than read in place, the MTP block left on the CPU when it does not fit beside
// them, and a model larger than the device refused, or run on the CPU under `auto`
// (docs/cuda.md §placement). The emulated device is integrated unless told before it is first
// probed, so these tests are a binary of their own whose static initializer makes it discrete.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/cuda/placement.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/mtp.hpp"
#include "tests/engine/cuda/emulated_driver.hpp"
#include "tests/engine/model/device_test_support.hpp"
#include "tests/engine/model/mtp_sidecar.hpp"

namespace ds4 {
namespace {

namespace fs = std::filesystem;

constexpr size_t kGiB = size_t(1) << 30;
// Before main(): the device's kind is probed once per process.
const bool kDiscrete = (cuda::emu::emulate_discrete_device(2 * kGiB), true);

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Each test sets the free memory it needs; this gives the device back its 2 GiB afterwards.
struct DiscreteDevice : testing::Test {
  void SetUp() override {
    ASSERT_TRUE(kDiscrete);
    SKIP_WITHOUT_GPU();
    ASSERT_FALSE(cuda::Device::open().info().integrated);
  }
  void TearDown() override { cuda::emu::set_free_memory(2 * kGiB - cuda::emu::allocated_bytes()); }
};

TEST_F(DiscreteDevice, TheWeightsAreCopiedToTheDeviceAndItsLogitsAreTheCpus) {
  const fs::path tiny = test::tiny_vectors_dir() / "model.gguf";
  const size_t before = cuda::emu::allocated_bytes();
  std::vector<std::string> log;
  LoadOptions fast;
  fast.threads = 1;
  const LoadedModel loaded =
      load_model_on(cuda::Backend::Cuda, tiny, fast, [&](const std::string& l) { log.push_back(l); });
  ASSERT_EQ(loaded.model->info().device, ComputeDevice::Cuda);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_TRUE(contains(log[1], "weights on the device: weights 0.02 GiB copied to CUDA-thread emulator")) << log[1];
  EXPECT_EQ(log[2], "device self-check: 13 tokens' logits bit-identical to the CPU's");
  // A copy, not a registration of the mapping: the device holds at least the whole file.
  EXPECT_EQ(cuda::emu::registered_bytes(), 0u);
  EXPECT_GE(cuda::emu::allocated_bytes() - before, fs::file_size(tiny));

  // Beyond the self-check: a longer prefill and greedy decode steps, bit for bit.
  const std::shared_ptr<Model> cpu = test::device::fast_tiny();
  Context c(cpu), d(loaded.model);
  const std::vector<int32_t> t = test::random_tokens(*cpu, 16, 11);
  c.prefill(t);
  d.prefill(t);
  for (int step = 0; step < 3; step++) {
    ASSERT_TRUE(test::same_bits(d.logits(), c.logits())) << "step " << step;
    const auto next = int32_t(std::max_element(c.logits().begin(), c.logits().end()) - c.logits().begin());
    c.decode(next);
    d.decode(next);
  }
}

TEST_F(DiscreteDevice, AnMtpBlockThatDoesNotFitBesideTheModelDraftsOnTheCpu) {
  const fs::path tiny = test::tiny_vectors_dir() / "model.gguf";
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = 1;
  o.device = ComputeDevice::Cuda;
  const std::shared_ptr<Model> dev = Model::load(tiny, o);
  const std::shared_ptr<Model> cpu = test::device::fast_tiny();
  // What is left is less than any sidecar needs with the workspace and the margin: another
  // process took the rest after the model was placed.
  cuda::emu::set_free_memory(cuda::kWorkspaceBytes + (size_t(256) << 20) - 1);
  const fs::path sidecar = fs::temp_directory_path() / ("ds4d-discrete-mtp-" + std::to_string(::getpid()) + ".gguf");
  test::write_sidecar(sidecar);
  const auto mtp_cpu = MtpModel::load(sidecar, cpu, tiny), mtp_dev = MtpModel::load(sidecar, dev, tiny);
  fs::remove(sidecar);
  EXPECT_TRUE(contains(mtp_dev->placement(), "MTP block on the CPU: its weights do not fit the device (weights "))
      << mtp_dev->placement();
  EXPECT_TRUE(contains(mtp_dev->placement(), "do not fit the 0.75 GiB free on CUDA-thread emulator"))
      << mtp_dev->placement();

  // The drafter runs on the CPU from the hidden states the device context keeps.
  const std::vector<int32_t> t = test::random_tokens(*cpu, 16, 5);
  test::DraftersSideBySide p(cpu, mtp_cpu, dev, mtp_dev, std::span<const int32_t>(t).first(12));
  for (size_t n = 12; n < 16; n++) {
    const auto want = p.dc.draft(p.tc, t[n], 3), got = p.dd.draft(p.td, t[n], 3);
    ASSERT_EQ(want.size(), 3u) << n;
    EXPECT_EQ(got, want) << n;
    EXPECT_TRUE(test::same_bits(p.dd.last_logits(), p.dc.last_logits())) << n;
    p.tc.decode(t[n]);
    p.td.decode(t[n]);
  }
}

TEST_F(DiscreteDevice, AModelLargerThanTheDeviceIsAnErrorUnderCudaAndRunsOnTheCpuUnderAuto) {
  const fs::path tiny = test::tiny_vectors_dir() / "model.gguf";
  cuda::emu::set_free_memory(cuda::kWorkspaceBytes);  // the workspace alone, no room for the margin
  LoadOptions fast;
  fast.threads = 1;
  std::vector<std::string> log;
  try {
    load_model_on(cuda::Backend::Cuda, tiny, fast, [&](const std::string& l) { log.push_back(l); });
    ADD_FAILURE() << "--backend cuda loaded a model that does not fit the device";
  } catch (const ModelLoadError& e) {
    EXPECT_TRUE(contains(e.what(), "do not fit the 0.50 GiB free on CUDA-thread emulator")) << e.what();
    EXPECT_TRUE(contains(e.what(), "use --backend cpu")) << e.what();
  }
  log.clear();
  const LoadedModel loaded =
      load_model_on(cuda::Backend::Automatic, tiny, fast, [&](const std::string& l) { log.push_back(l); });
  EXPECT_EQ(loaded.model->info().device, ComputeDevice::Cpu);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].rfind("backend auto: CPU after all (", 0), 0u) << log[1];
  EXPECT_TRUE(contains(log[1], "do not fit the 0.50 GiB free")) << log[1];
}

}  // namespace
}  // namespace ds4
