// A fault of the CUDA graphs the context survives (docs/cuda.md §graphs) costs the graphs, not
// the device: when the device self-check fails with the short passes as graphs, load_model_on
// checks again with every kernel launched by itself, keeps the device and says so. Emulated only:
// the fault is the emulator's (emu::fail_graphs), which a real driver cannot be asked for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/cuda/pass_graph.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "tests/engine/cuda/emulated_driver.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {

TEST(GraphFallback, AGraphFaultAtTheSelfCheckTurnsGraphsOffAndKeepsTheDevice) {
  SKIP_WITHOUT_GPU();
  struct Restore {
    bool was = cuda::PassGraph::enabled();
    ~Restore() {
      cuda::emu::fail_graphs(0);
      cuda::PassGraph::set_enabled(was);
    }
  } restore;
  cuda::PassGraph::set_enabled(true);
  cuda::emu::fail_graphs(900);  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, at instantiation
  std::vector<std::string> log;
  LoadOptions fast;
  fast.threads = 1;
  const LoadedModel loaded = load_model_on(cuda::Backend::Automatic, test::tiny_vectors_dir() / "model.gguf", fast,
                                           [&](const std::string& l) { log.push_back(l); });
  EXPECT_EQ(loaded.model->info().device, ComputeDevice::Cuda);
  EXPECT_FALSE(cuda::PassGraph::enabled());
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[2].rfind("CUDA graphs off: the device self-check failed with them (cuGraphInstantiate: "
                         "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                         0),
            0u)
      << log[2];
  EXPECT_EQ(log[3], "device self-check: 13 tokens' logits bit-identical to the CPU's");
}

}  // namespace
}  // namespace ds4
