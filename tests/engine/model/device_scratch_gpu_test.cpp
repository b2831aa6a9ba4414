// The device forward's scratch is the model's, lent per pass (engine/model/scratch_pool.hpp):
// what a prefill grows it to stays within the plan's workspace term, contexts after the first
// allocate only their own state, a BatchStep borrows the same scratch, and the MTP drafters of
// several sequences share one step scratch (docs/memory.md §scratch). Measured as the device's free memory; skips
// without a GPU, and model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/batch_step.hpp"
#include "engine/model/device/device_forward.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/model/mtp_impl.hpp"
#include "engine/planner/plan_from_gguf.hpp"
#include "tests/engine/model/device_test_support.hpp"
#include "tests/engine/model/mtp_sidecar.hpp"

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

// Device drafters of two sequences: the first draft grows the sidecar's draft scratch on the
// device (within the plan's drafter term), the other's draft allocates nothing (its block's rows
// were allocated with the drafter).
TEST(DeviceScratch, DraftersShareOneStepScratchWithinThePlansDrafterTerm) {
  SKIP_WITHOUT_GPU();
  const std::shared_ptr<Model> m = load_on_device();
  const std::filesystem::path tiny = test::tiny_vectors_dir() / "model.gguf";
  const std::filesystem::path sidecar =
      std::filesystem::temp_directory_path() / ("ds4d-device-draft-scratch-" + std::to_string(::getpid()) + ".gguf");
  test::write_sidecar(sidecar);
  const std::shared_ptr<const MtpModel> mtp = MtpModel::load(sidecar, m, tiny);
  const std::shared_ptr<const MtpModel> mtp_cpu = MtpModel::load(sidecar, test::device::fast_tiny(), tiny);
  std::filesystem::remove(sidecar);
  ASSERT_TRUE(mtp->impl().device) << mtp->placement();
  // Two sequences, each a device target and drafter beside the same on the CPU: the drafters take
  // turns with the one scratch (and its graphs, updated with each drafter's own rows), and still
  // draft the CPU's tokens and logits bits.
  std::vector<std::unique_ptr<test::DraftersSideBySide>> seqs;
  for (int32_t i = 0; i < 2; i++)
    seqs.push_back(
        std::make_unique<test::DraftersSideBySide>(test::device::fast_tiny(), mtp_cpu, m, mtp, prompt(1 + 5 * i, 6)));
  const auto draft = [&](size_t i) {
    test::DraftersSideBySide& p = *seqs[i];
    const std::vector<int32_t> got = p.dd.draft(p.td, 3, 2);
    EXPECT_EQ(got, p.dc.draft(p.tc, 3, 2)) << "sequence " << i;
    EXPECT_TRUE(test::same_bits(p.dd.last_logits(), p.dc.last_logits()))
        << "sequence " << i << ": the drafts' logits differ from the CPU's";
    return got.size();
  };
  const auto reject = [&](size_t i) {  // the target takes the token alone: the drafts are rejected
    seqs[i]->tc.decode(3);
    seqs[i]->td.decode(3);
  };
  const size_t before = free_now();
  ASSERT_EQ(draft(0), 2u);
  const size_t scratch = before - free_now();
  EXPECT_GT(scratch, 0u);
  const planner::ModelFacts facts = planner::read_model_facts(m->gguf());
  EXPECT_LE(scratch, planner::drafter_workspace(facts.dims));
  std::cout << "device scratch of a drafter's 7-row catch-up: " << scratch << " B, planned "
            << planner::drafter_workspace(facts.dims) << " B\n";
  reject(0);
  for (size_t round = 0; round < 2; round++)
    for (size_t i = round == 0 ? 1 : 0; i < seqs.size(); i++) {
      const size_t made = free_now();
      ASSERT_EQ(draft(i), 2u);
      EXPECT_EQ(made, free_now()) << "drafter " << i << "'s draft allocated device memory: a scratch of its own";
      reject(i);
    }
  EXPECT_EQ(mtp->impl().draft_scratch.made(), 1u);
}

}  // namespace
}  // namespace ds4
