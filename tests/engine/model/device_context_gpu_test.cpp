// ds4::Context on a model loaded for the device (LoadOptions::device Cuda) against the same
// calls on a CPU context of the Fast model, on the real ds4-tiny weights: logits bit for bit
// through prefill, decode, verify and truncate (the rollback of docs/cuda.md §rollback, across
// compressor windows), the same hidden states for an MTP drafter, the same snapshot bytes, a
// snapshot written on one backend restored on the other, a BatchStep over device contexts, the
// host's waits in a pass, a hash layer's routing error, and the short passes as CUDA graphs.
// Skips where no GPU is usable; model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/cuda/pass_graph.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/batch_step.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {
using test::device::first_difference;

std::shared_ptr<Model> device_tiny() {
  static const std::shared_ptr<Model> m = [] {
    LoadOptions o;
    o.arithmetic = Arithmetic::Fast;
    o.threads = 1;
    o.device = ComputeDevice::Cuda;
    return Model::load(test::tiny_vectors_dir() / "model.gguf", o);
  }();
  return m;
}

ContextOptions options() {
  ContextOptions o;
  o.context_length = 128;
  o.rollback = 8;
  o.keep_hidden = 4;
  return o;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

// The same calls on both contexts, each step's logits compared.
struct Pair {
  Context cpu{test::device::fast_tiny(), options()};
  Context dev{device_tiny(), options()};

  std::string prefill(const std::vector<int32_t>& t) {
    return first_difference(copy(dev.prefill(t)), copy(cpu.prefill(t)));
  }
  std::string decode(int32_t t) { return first_difference(copy(dev.decode(t)), copy(cpu.decode(t))); }
  std::string verify(const std::vector<int32_t>& t) {
    const auto d = dev.verify(t), c = cpu.verify(t);
    for (size_t i = 0; i < t.size(); i++)
      if (std::string diff = first_difference(d[i], c[i]); !diff.empty())
        return "row " + std::to_string(i) + ": " + diff;
    return "";
  }
  std::string truncate(size_t n) {
    dev.truncate(n);
    cpu.truncate(n);
    return first_difference(copy(dev.logits()), copy(cpu.logits()));
  }
};

std::vector<int32_t> random_tokens(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int32_t> tok(0, int32_t(test::device::fast_tiny()->info().n_vocab) - 1);
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = tok(rng);
  return out;
}

TEST(DeviceContextGpu, LoadsForTheDeviceAndSaysWhereTheWeightsAre) {
  SKIP_WITHOUT_GPU();
  EXPECT_EQ(device_tiny()->info().device, ComputeDevice::Cuda);
  // In place on a unified-memory device (GB10, the emulator), copied on a discrete one.
  const char* where = cuda::probe().integrated ? "read in place" : "copied to";
  EXPECT_NE(device_tiny()->info().placement.find(where), std::string::npos) << device_tiny()->info().placement;
  LoadOptions exact;
  exact.arithmetic = Arithmetic::Exact;
  exact.device = ComputeDevice::Cuda;
  EXPECT_THROW(Model::load(test::tiny_vectors_dir() / "model.gguf", exact), std::invalid_argument);
}

// engine.backend applied to a load: the device with its placement and self-check logged, Exact
// kept on the CPU (refused for `cuda`), `cpu` never probing.
TEST(DeviceContextGpu, LoadOnTheChosenBackendLogsThePlacementAndTheSelfCheck) {
  SKIP_WITHOUT_GPU();
  const auto path = test::tiny_vectors_dir() / "model.gguf";
  std::vector<std::string> log;
  const auto keep = [&](const std::string& l) { log.push_back(l); };
  LoadOptions fast;
  fast.threads = 1;
  const LoadedModel on_device = load_model_on(cuda::Backend::Automatic, path, fast, keep);
  EXPECT_EQ(on_device.model->info().device, ComputeDevice::Cuda);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].rfind("backend auto: CUDA on ", 0), 0u) << log[0];
  EXPECT_EQ(log[1], "weights on the device: " + on_device.model->info().placement);
  EXPECT_EQ(log[2], "device self-check: 13 tokens' logits bit-identical to the CPU's");

  LoadOptions exact = fast;
  exact.arithmetic = Arithmetic::Exact;
  EXPECT_THROW(load_model_on(cuda::Backend::Cuda, path, exact, keep), std::invalid_argument);
  log.clear();
  EXPECT_EQ(load_model_on(cuda::Backend::Automatic, path, exact, keep).model->info().device, ComputeDevice::Cpu);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1], "backend auto: CPU after all (Exact arithmetic runs on the CPU only)");
  log.clear();
  EXPECT_EQ(load_model_on(cuda::Backend::Cpu, path, fast, keep).model->info().device, ComputeDevice::Cpu);
  EXPECT_TRUE(log.empty());
}

TEST(DeviceContextGpu, PrefillDecodeVerifyAndRollbackMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(41);
  Pair p;
  // 38 tokens: the ratio-4 layers' indexer chooses among more rows than top_k.
  EXPECT_EQ(p.prefill(random_tokens(rng, 38)), "");
  EXPECT_EQ(p.decode(random_tokens(rng, 1)[0]), "");
  // A 5-token draft crossing a ratio-4 window end (39 -> 44), then the rollback of a partly
  // accepted draft: back to 41, inside the window it completed.
  EXPECT_EQ(p.verify(random_tokens(rng, 5)), "") << "verify";
  EXPECT_EQ(p.truncate(41), "") << "truncate";
  EXPECT_EQ(p.decode(random_tokens(rng, 1)[0]), "") << "decode after the rollback";
  EXPECT_EQ(p.verify(random_tokens(rng, 3)), "") << "verify after the rollback";
  // Out of reach: refused, nothing changed, as on the CPU.
  EXPECT_THROW(p.dev.truncate(30), std::out_of_range);
  EXPECT_EQ(p.dev.size(), 45u);
  EXPECT_EQ(p.decode(random_tokens(rng, 1)[0]), "") << "decode after a refused rollback";
  for (size_t pos = p.dev.size() - 4; pos < p.dev.size(); pos++)
    EXPECT_EQ(first_difference(copy(p.dev.hidden(pos)), copy(p.cpu.hidden(pos))), "") << "hidden " << pos;
  EXPECT_EQ(p.dev.snapshot(), p.cpu.snapshot()) << "the snapshots differ";
}

TEST(DeviceContextGpu, SnapshotsMoveBetweenTheBackends) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(42);
  Pair p;
  EXPECT_EQ(p.prefill(random_tokens(rng, 21)), "");
  // Device -> CPU and CPU -> device, then both continue like the originals.
  Context cpu_from_dev(test::device::fast_tiny(), options()), dev_from_cpu(device_tiny(), options());
  cpu_from_dev.restore(p.dev.snapshot());
  dev_from_cpu.restore(p.cpu.snapshot());
  const std::vector<int32_t> more = random_tokens(rng, 4);
  const auto want = copy(p.cpu.prefill(more));
  EXPECT_EQ(first_difference(copy(cpu_from_dev.prefill(more)), want), "") << "restored on the CPU";
  EXPECT_EQ(first_difference(copy(dev_from_cpu.prefill(more)), want), "") << "restored on the device";
  // A bad snapshot is refused and the device context is untouched.
  std::vector<uint8_t> bad = p.dev.snapshot();
  bad[bad.size() / 2] ^= 1;
  EXPECT_THROW(dev_from_cpu.restore(bad), std::runtime_error);
  const int32_t next = random_tokens(rng, 1)[0];
  EXPECT_EQ(first_difference(copy(dev_from_cpu.decode(next)), copy(p.cpu.decode(next))), "") << "after a bad restore";
  dev_from_cpu.reset();
  Context fresh(test::device::fast_tiny(), options());
  EXPECT_EQ(first_difference(copy(dev_from_cpu.prefill(more)), copy(fresh.prefill(more))), "") << "after reset";
}

// One pass over three device contexts (a verify, a first prefill, a decode): each ends as its CPU
// twin run alone, logits and hidden states bit for bit.
TEST(DeviceContextGpu, BatchStepOverDeviceContextsMatchesSoloCpuRuns) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(43);
  Pair a, b, c;
  EXPECT_EQ(a.prefill(random_tokens(rng, 9)), "");
  EXPECT_EQ(c.prefill(random_tokens(rng, 5)), "");
  BatchStep step(device_tiny(), 64);
  const std::vector<int32_t> ta = random_tokens(rng, 3), tb = random_tokens(rng, 6), tc = random_tokens(rng, 1);
  const BatchEntry entries[] = {{&a.dev, ta, true}, {&b.dev, tb, false}, {&c.dev, tc, false}};
  step.run(entries);
  const auto va = a.cpu.verify(ta);
  for (size_t i = 0; i < ta.size(); i++)
    EXPECT_EQ(first_difference(copy(step.row_logits(0).subspan(i * va[i].size(), va[i].size())), va[i]), "")
        << "row " << i;
  EXPECT_EQ(first_difference(copy(b.dev.logits()), copy(b.cpu.prefill(tb))), "");
  EXPECT_EQ(first_difference(copy(c.dev.logits()), copy(c.cpu.decode(tc[0]))), "");
  for (Pair* p : {&a, &b, &c})
    EXPECT_EQ(first_difference(copy(p->dev.hidden(p->dev.size() - 1)), copy(p->cpu.hidden(p->cpu.size() - 1))), "");
  // And each continues alone.
  EXPECT_EQ(a.decode(random_tokens(rng, 1)[0]), "");
  EXPECT_EQ(c.decode(random_tokens(rng, 1)[0]), "");
}

// A pass waits for the device only for its results: the logits, both error words (the
// embedding's and the hash layers' routing) in one read, and the kept final states in at most two
// copies (where their ring wraps). Until 7 Dec 2026 each of ds4-tiny's three hash layers read its
// routing word itself and each kept state came down alone: a decode waited 6 times, a 6-row
// verify 11.
TEST(DeviceContextGpu, APassWaitsForTheDeviceOnlyForItsResults) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(43);
  Context c(device_tiny(), options());  // keeps final states
  c.prefill(random_tokens(rng, 9));
  const cuda::Device& dev = cuda::Device::open();
  uint64_t before = dev.host_waits();
  c.decode(random_tokens(rng, 1)[0]);
  EXPECT_EQ(dev.host_waits() - before, 3u) << "decode";
  before = dev.host_waits();
  c.verify(random_tokens(rng, 6));
  EXPECT_LE(dev.host_waits() - before, 4u) << "verify";
}

// A tid2eid entry outside the experts (a corrupt file): the pass that routes that token fails
// with the hash layer's error, read once the pass is queued, as the CPU fails in route_token.
TEST(DeviceContextGpu, ATokenAHashLayerCannotRouteFailsThePass) {
  SKIP_WITHOUT_GPU();
  namespace fs = std::filesystem;
  const fs::path src = test::tiny_vectors_dir() / "model.gguf";
  const fs::path bad = fs::temp_directory_path() / ("ds4d-bad-tid2eid-" + std::to_string(::getpid()) + ".gguf");
  fs::copy_file(src, bad, fs::copy_options::overwrite_existing);
  constexpr int32_t kToken = 5;
  {
    const gguf::GgufFile f = gguf::GgufFile::open(src.string());
    const gguf::TensorInfo* t = f.find_tensor("blk.1.ffn_gate_tid2eid.weight");
    ASSERT_NE(t, nullptr);
    const auto offset = f.bytes(*t).data() - f.base() + std::ptrdiff_t(kToken * t->dims[0] * sizeof(int32_t));
    std::fstream io(bad, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(offset);
    const int32_t expert = 99;
    io.write(reinterpret_cast<const char*>(&expert), sizeof expert);
  }
  LoadOptions lo;
  lo.arithmetic = Arithmetic::Fast;
  lo.threads = 1;
  lo.device = ComputeDevice::Cuda;
  const auto model = Model::load(bad, lo);
  fs::remove(bad);  // mapped: the name is no longer needed
  Context c(model, options());
  try {
    c.prefill(std::vector<int32_t>{1, kToken, 2});
    ADD_FAILURE() << "the pass routed a token to expert 99";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tid2eid"), std::string::npos) << e.what();
  }
}

// Decode, verify and short prefills as CUDA graphs (docs/cuda.md §graphs): every such pass is one
// graph launch that runs the kernels the plain pass launches one by one, with the same bits; and
// a decode's executables are kept and updated, not made again for each token.
TEST(DeviceContextGpu, ShortPassesRunAsGraphsOfThePlainPassesKernelsAndBits) {
  SKIP_WITHOUT_GPU();
  struct Restore {
    bool was = cuda::PassGraph::enabled();
    ~Restore() { cuda::PassGraph::set_enabled(was); }
  } restore;
  std::mt19937 rng(44);
  Context graphed(device_tiny(), options()), plain(device_tiny(), options());
  const cuda::Device& dev = cuda::Device::open();
  uint64_t kernels = 0;  // the last pass's
  // The same call on both contexts, graphs on for the first: one graph launch there, none in the
  // second, the same kernels, the same logits.
  const auto both = [&](const auto& call) {
    cuda::PassGraph::set_enabled(true);
    kernels = dev.launches();
    uint64_t graphs = dev.graph_launches();
    const std::vector<float> a = call(graphed);
    kernels = dev.launches() - kernels;
    EXPECT_EQ(dev.graph_launches() - graphs, 1u);
    cuda::PassGraph::set_enabled(false);
    const uint64_t plain_kernels = dev.launches();
    graphs = dev.graph_launches();
    const std::vector<float> b = call(plain);
    EXPECT_EQ(dev.graph_launches() - graphs, 0u);
    EXPECT_EQ(dev.launches() - plain_kernels, kernels);
    EXPECT_EQ(first_difference(a, b), "");
    return a;
  };
  const std::vector<int32_t> prompt = random_tokens(rng, 9);
  std::vector<float> logits = both([&](Context& c) { return copy(c.prefill(prompt)); });
  const uint64_t made = cuda::PassGraph::all_instantiations(), updated = cuda::PassGraph::all_updates();
  constexpr int kSteps = 6;  // across a ratio-4 window end (about 3 s per pass pair on the emulator)
  for (int i = 0; i < kSteps; i++) {
    const auto next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = both([&](Context& c) { return copy(c.decode(next)); });
  }
  std::cout << "a decode step: " << kernels << " kernels in one graph launch (" << device_tiny()->info().n_layer
            << " layers)\n";
  const uint64_t decode_made = cuda::PassGraph::all_instantiations() - made;
  EXPECT_EQ(decode_made + cuda::PassGraph::all_updates() - updated, uint64_t(kSteps));
  // 2 measured (12 steps: 2 made, 10 updated); one made per step would be 6.
  EXPECT_LE(decode_made, 3u) << "a decode step's shape changes only at the compressors' window ends";
  const std::vector<int32_t> drafts = random_tokens(rng, 6);
  both([&](Context& c) {
    std::vector<float> all;
    for (const auto& row : c.verify(drafts)) all.insert(all.end(), row.begin(), row.end());
    return all;
  });
}

}  // namespace
}  // namespace ds4
