// The device forward's scratch is the model's, lent per pass (engine/model/scratch_pool.hpp):
// what a prefill grows it to stays within the plan's workspace term, contexts after the first
// allocate only their own state, and a BatchStep borrows the same scratch
// (docs/memory.md §scratch). Measured as the device's free memory; skips without a GPU, and
// model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>

#include <iostream>
#include <numeric>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/batch_step.hpp"
#include "engine/model/device/device_forward.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/planner/plan_from_gguf.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {

constexpr int kPrompt = 16;  // the first context's prefill; the others' are shorter

// A model of its own, so its scratch pool starts empty.
std::shared_ptr<Model> load_on_device() {
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = 1;
  o.device = ComputeDevice::Cuda;
  return Model::load(test::tiny_vectors_dir() / "model.gguf", o);
}

ContextOptions options() {
  ContextOptions o;
  o.context_length = 128;
  o.rollback = 4;
  return o;
}

std::vector<int32_t> prompt(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

size_t free_now() { return cuda::Device::open().free_memory(); }

TEST(DeviceScratch, ContextsShareOnePassScratchWithinThePlansWorkspace) {
  SKIP_WITHOUT_GPU();
  const std::shared_ptr<Model> m = load_on_device();
  Context a(m, options());
  const size_t a_made = free_now();
  a.prefill(prompt(1, kPrompt));
  const size_t scratch = a_made - free_now();  // the pass's scratch, grown for kPrompt rows
  a.verify(prompt(100, 4));                    // and for 4 rows of logits (the batched step's)
  EXPECT_GT(scratch, 0u);
  // The plan counts one prefill's activations (planner::workspace_estimate less the CUDA
  // context and graphs): the scratch a prefill grew must fit in it.
  const planner::ModelFacts facts = planner::read_model_facts(m->gguf());
  const uint64_t planned =
      planner::workspace_estimate(facts.dims, kPrompt) - planner::kCudaContextBytes - planner::graph_bytes(facts.dims);
  EXPECT_LE(scratch, planned) << "planned per token: " << planner::activation_bytes_per_token(facts.dims) << " B";
  std::cout << "device scratch of a " << kPrompt << "-token prefill: " << scratch << " B, planned " << planned
            << " B\n";

  // More contexts: their prefills (the GEMM path, as a's) allocate nothing but their state,
  // which their constructors allocated.
  std::vector<std::unique_ptr<Context>> more;
  for (int32_t i = 0; i < 2; i++) {
    more.push_back(std::make_unique<Context>(m, options()));
    const size_t made = free_now();
    more.back()->prefill(prompt(10 + i, 9));
    EXPECT_EQ(made, free_now()) << "context " << i + 1 << "'s prefill allocated device memory: a scratch of its own";
  }
  // A batched step over all three: the same scratch again.
  const size_t before = free_now();
  BatchStep step(m, 8);
  std::vector<std::vector<int32_t>> next{{5}, {6, 7}, {8}};
  std::vector<BatchEntry> entries{
      {&a, next[0], false}, {more[0].get(), next[1], true}, {more[1].get(), next[2], false}};
  step.run(entries);
  EXPECT_EQ(before, free_now()) << "the batched step allocated a scratch of its own";
  EXPECT_EQ(m->impl().device_scratch->made(), 1u);
}

}  // namespace
}  // namespace ds4
