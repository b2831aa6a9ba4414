// PassGraph (docs/cuda.md §graphs): what a captured function queues runs when the graph is
// launched, with each run's own arguments and uploads, as the same calls made one by one; a shape
// seen before reuses its executable; a wait inside a capture is refused with nothing run; a buffer
// released inside a capture stays valid until the graph has run. Skips with the reason where no
// GPU is usable (cuda_emulated_gpu_tests runs it on the emulator).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/cuda/elementwise.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::cuda::DeviceBuffer;
using ds4::cuda::DeviceSpan;
using ds4::cuda::ElementwiseOp;
using ds4::cuda::PassGraph;

constexpr int64_t kN = 1000;

// What the captured function queues: an upload from pageable memory, a kernel reading it, a
// device copy, a memset of part of the copy and a second kernel; `extra` adds one more kernel
// (another shape).
struct Queue {
  DeviceBuffer in{kN * sizeof(float)}, mid{kN * sizeof(float)}, copy{kN * sizeof(float)}, out{kN * sizeof(float)};
  void operator()(const std::vector<float>& x, bool extra) const {
    DeviceSpan(in).upload(x.data(), x.size() * sizeof(float));
    ds4::cuda::elementwise(ElementwiseOp::Silu, in, mid, kN);
    DeviceSpan(copy).copy_from(mid);
    DeviceSpan(copy).sub(0, 64 * sizeof(float)).zero();
    ds4::cuda::elementwise(ElementwiseOp::Sigmoid, copy, out, kN);
    if (extra) ds4::cuda::elementwise(ElementwiseOp::Exp, out, out, kN);
  }
};

TEST(PassGraphGpu, RunsWhatWasQueuedWithEachRunsArgumentsAsThePlainCalls) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  const Queue graphed, plain;
  PassGraph graph;
  ds4::cuda::Device& dev = ds4::cuda::Device::open();
  const bool shapes[] = {false, false, true, false, true, false};
  for (const bool extra : shapes) {
    std::vector<float> x = randn(rng, kN, 2.0f);
    const uint64_t launches = dev.launches(), graphs = dev.graph_launches();
    graph.run([&] { graphed(x, extra); });
    const uint64_t graph_kernels = dev.launches() - launches;
    EXPECT_EQ(dev.graph_launches() - graphs, 1u);
    // The upload was staged: the host vector may change at once, as after a plain upload.
    const std::vector<float> sent = x;
    std::fill(x.begin(), x.end(), 0.0f);
    const std::vector<float> got = download(graphed.out, kN);
    plain(sent, extra);
    EXPECT_EQ(graph_kernels, dev.launches() - launches - graph_kernels) << "the graph ran the plain calls' kernels";
    EXPECT_EQ(first_difference(got, download(plain.out, kN)), "") << "extra " << extra;
  }
  // Two shapes: one executable each, the other four runs updated theirs.
  EXPECT_EQ(graph.instantiations(), 2u);
  EXPECT_EQ(graph.updates(), 4u);
  EXPECT_EQ(graph.shapes(), 2u);
}

TEST(PassGraphGpu, AWaitInsideACaptureIsRefusedAndNothingRuns) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(12);
  const Queue q;
  const std::vector<float> before = randn(rng, kN, 1.0f);
  DeviceSpan(q.out).upload(before.data(), before.size() * sizeof(float));
  PassGraph graph;
  std::vector<float> peek(kN);
  EXPECT_THROW(graph.run([&] {
    q(randn(rng, kN, 1.0f), false);
    DeviceSpan(q.out).download(peek.data(), peek.size() * sizeof(float));
  }),
               std::logic_error);
  EXPECT_THROW(graph.run([&] { ds4::cuda::Device::open().synchronize(); }), std::logic_error);
  EXPECT_EQ(graph.instantiations(), 0u);
  // Nothing queued in the failed captures ran, and this thread launches on its own again.
  EXPECT_EQ(first_difference(download(q.out, kN), before), "");
  const std::vector<float> x = randn(rng, kN, 1.0f);
  graph.run([&] { q(x, false); });
  const std::vector<float> got = download(q.out, kN);
  const Queue plain;
  plain(x, false);
  EXPECT_EQ(first_difference(got, download(plain.out, kN)), "");
}

TEST(PassGraphGpu, ABufferReleasedInsideACaptureLastsUntilTheGraphHasRun) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(13);
  const std::vector<float> x = randn(rng, kN, 1.0f);
  DeviceBuffer out(kN * sizeof(float)), want(kN * sizeof(float));
  PassGraph graph;
  graph.run([&] {
    DeviceBuffer scratch(kN * sizeof(float));  // as a scratch buffer that grows inside a pass
    DeviceSpan(scratch).upload(x.data(), x.size() * sizeof(float));
    ds4::cuda::elementwise(ElementwiseOp::Softplus, scratch, out, kN);
  });
  const DeviceBuffer in = upload(x);
  ds4::cuda::elementwise(ElementwiseOp::Softplus, in, want, kN);
  EXPECT_EQ(first_difference(download(out, kN), download(want, kN)), "");
}

}  // namespace
