// The device attention takes a pass's rows all at once (docs/cuda.md §attention-rows): a pass
// longer than the raw ring, passes that complete several compressor windows and make the indexer
// choose, split into launch groups or not, and passes of two sequences side by side, all bit for
// bit against the CPU's row-by-row block_forward on the real ds4-tiny weights; and the launches a
// pass makes do not grow with its rows. Skips without a GPU; model_device_emulated_tests runs it
// on the emulator.
#include <gtest/gtest.h>

#include <initializer_list>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_attention.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {
using test::device::first_difference;

constexpr uint32_t kCapacity = 256;

// One sequence on both sides: the CPU's layer states and the device's state of layer il.
struct Sequence {
  std::vector<model::LayerState> cpu;
  model::device::DeviceLayerState dev;
  uint32_t pos = 0;
  explicit Sequence(const model::ModelConfig& cfg, uint32_t il)
      : cpu(model::make_layer_states(cfg, kCapacity, 0)), dev(cpu[il]) {}
};

class AttentionRows {
 public:
  explicit AttentionRows(uint32_t il)
      : m_(test::device::fast_tiny()->impl()),
        il_(il),
        dw_(m_.file.base(), m_.file.size(), cuda::WeightPlacement::InPlace),
        spec_(model::block_spec(m_, il)) {}

  // parts[i] rows of seqs[i] in one pass (rows in that order) on both sides; returns the first
  // difference of the attention's output ("" when none).
  std::string pass(std::vector<Sequence*> seqs, std::vector<int> parts, model::device::AttentionScratch& as) {
    const model::ModelConfig& cfg = m_.cfg;
    int T = 0;
    for (int n : parts) T += n;
    std::vector<float> H(size_t(T) * cfg.hc_dim()), mid(H.size()), out(H.size());
    for (float& v : H) v = nd_(rng_);
    std::vector<int32_t> tokens(size_t(T), 7);
    std::vector<model::RowSlot> rows;
    std::vector<model::device::RowRun> runs;
    for (size_t i = 0; i < seqs.size(); i++) {
      for (int t = 0; t < parts[i]; t++)
        rows.push_back(model::RowSlot{&seqs[i]->cpu, seqs[i]->pos + uint32_t(t), nullptr});
      runs.push_back({&seqs[i]->dev, seqs[i]->pos, parts[i]});
      seqs[i]->pos += uint32_t(parts[i]);
    }
    model::block_forward(m_, spec_, rows.data(), tokens.data(), H.data(), T, mid.data(), out.data(), cs_);
    cuda::DeviceBuffer dH(H.size() * 4), dmid(H.size() * 4);
    dH.upload(H.data(), H.size() * 4);
    model::device::attention_sublayer(dw_, cfg, m_.w.layers[il_], m_.rope[il_], runs, dH, T, dmid, ls_, as);
    std::vector<float> got(H.size());
    dmid.download(got.data(), got.size() * 4);
    return first_difference(got, mid);
  }

  const model::ModelConfig& cfg() const { return m_.cfg; }

 private:
  const Model::Impl& m_;
  uint32_t il_;
  model::device::DeviceWeights dw_;
  model::BlockSpec spec_;
  model::ForwardScratch cs_;
  model::device::LayerScratch ls_;
  std::mt19937 rng_{31};
  std::normal_distribution<float> nd_{0.0f, 1.0f};
};

// Passes of n rows, each with a launch group budget (0: the plan's), through layer il from the
// start; then the device state against the CPU's.
void check_passes(uint32_t il, std::initializer_list<std::pair<int, int>> passes) {
  AttentionRows a(il);
  Sequence seq(a.cfg(), il);
  model::device::AttentionScratch as;
  for (const auto& [n, group] : passes) {
    as.group_slots = group != 0 ? uint64_t(group) : planner::kAttentionGroupSlots;
    ASSERT_EQ(a.pass({&seq}, {n}, as), "") << "layer " << il << ", " << n << " rows to position " << seq.pos;
  }
  const model::LayerState& want = seq.cpu[il];
  EXPECT_EQ(seq.dev.n_raw, want.n_raw);
  EXPECT_EQ(seq.dev.raw_head, want.raw_head);
  EXPECT_EQ(seq.dev.comp_n, want.comp.n);
  EXPECT_EQ(seq.dev.index_n, want.index_comp.n);
  std::vector<model::LayerState> back = model::make_layer_states(a.cfg(), kCapacity, 0);
  seq.dev.download(back[il]);
  EXPECT_EQ(first_difference(back[il].raw, want.raw), "") << "raw ring, layer " << il;
}

TEST(DeviceAttentionRowsGpu, APassLongerThanTheRawRingMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  // Layer 1 (raw window only, a ring of 128 rows): 140 rows from the start, whose last rows see
  // the pass's own raw rows the ring no longer holds, then 1 and 20 more.
  check_passes(1, {{140, 0}, {1, 0}, {20, 0}});
}

TEST(DeviceAttentionRowsGpu, LongPassesWithCompressorsAndTheIndexerMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  // Layer 2 (ratio 4 with the indexer): 40 rows (10 windows), 1, then 45 rows in launch groups of
  // at most 40 visible rows (one row per group once a row sees more), during which the indexer
  // starts choosing, then 20 in one group.
  ASSERT_LT(test::device::fast_tiny()->impl().cfg.idx_top_k * 4, 86u) << "the indexer must choose";
  check_passes(2, {{40, 0}, {1, 0}, {45, 40}, {20, 0}});
  // Layer 3 (ratio 128): its first window completes inside the second pass.
  check_passes(3, {{100, 0}, {40, 0}});
}

TEST(DeviceAttentionRowsGpu, TwoSequencesInOnePassMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  // Layer 2: both sequences' compressors and raw rows in one pass, the indexer choosing for x.
  AttentionRows a(2);
  Sequence x(a.cfg(), 2), y(a.cfg(), 2);
  model::device::AttentionScratch as;
  ASSERT_EQ(a.pass({&x}, {40}, as), "");
  ASSERT_EQ(a.pass({&y}, {7}, as), "");
  ASSERT_EQ(a.pass({&x, &y}, {30, 20}, as), "");
  ASSERT_EQ(a.pass({&y, &x}, {1, 3}, as), "");
}

TEST(DeviceAttentionRowsGpu, APassLaunchesTheSameKernelsForMoreRows) {
  SKIP_WITHOUT_GPU();
  // A pass of 16 rows, then one of 48, on layer 3 (ratio 128) and on layer 2 (ratio 4) once its
  // indexer chooses for every row. Both take the GEMM path (over 8 rows), where the grouped
  // output and a float projection take one launch per 8 rows: measured, 32 rows more add 16
  // launches on layer 3 and 32 on layer 2 (4 and 8 such products), none in the attention's
  // stateful part. Row by row, that part made at least 6 launches per row, the indexer's choice 3
  // more.
  cuda::Device& dev = cuda::Device::open();
  const uint32_t top_k = test::device::fast_tiny()->impl().cfg.idx_top_k;
  for (uint32_t il : {3u, 2u}) {
    AttentionRows a(il);
    Sequence seq(a.cfg(), il);
    model::device::AttentionScratch as;
    ASSERT_EQ(a.pass({&seq}, {il == 2 ? int(4 * top_k + 4) : 8}, as), "");
    if (il == 2) {
      ASSERT_GT(seq.dev.index_n, top_k);  // every row after this chooses
    }
    uint64_t made[2] = {0, 0};
    for (int i : {0, 1}) {
      const uint64_t before = dev.launches();
      ASSERT_EQ(a.pass({&seq}, {i == 0 ? 16 : 48}, as), "") << "layer " << il;
      made[i] = dev.launches() - before;
    }
    EXPECT_LT(made[1] - made[0], 2u * 32)
        << "layer " << il << ": launches for 16 rows " << made[0] << ", for 48 " << made[1];
    std::cout << "layer " << il << ": " << made[0] << " launches for 16 rows, " << made[1] << " for 48\n";
  }
}

}  // namespace
}  // namespace ds4
