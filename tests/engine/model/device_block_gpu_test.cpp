// Whole DS4 blocks on the device (engine/model/device/: the attention sublayer with its KV state,
// then the FFN sublayer) on the real ds4-tiny weights, against the CPU's block_forward in Fast mode
// bit for bit, step after step: a raw-window layer (1), a ratio-4 layer with its indexer (2) and a
// ratio-128 layer (3). 126 tokens are prefilled on the CPU and the state uploaded; the next 10 go
// through both in steps of 1 to 4, so the ring wraps, both compressors emit rows and the indexer
// chooses; the device state then downloads to the CPU's bits. Skips with the reason where no GPU
// is usable; model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_attention.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model.hpp"
#include "engine/model/model_impl.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {
using test::device::first_difference;

TEST(DeviceBlockGpu, BlocksMatchTheCpuStepAfterStep) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  const model::ModelConfig& cfg = m.cfg;
  const model::device::DeviceWeights dw(m.file.base(), m.file.size(), cuda::WeightPlacement::InPlace);
  constexpr uint32_t kPrefill = 126, kTokens = 136, kCapacity = 256;
  std::mt19937 rng(30);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(cfg.n_vocab) - 1);
  for (uint32_t il : {1u, 2u, 3u}) {
    std::vector<model::LayerState> cpu_states = model::make_layer_states(cfg, kCapacity, 0);
    model::device::DeviceLayerState dst(cpu_states[il]);
    model::ForwardScratch cs;
    model::device::LayerScratch ls;
    model::device::AttentionScratch as;
    const model::BlockSpec spec = model::block_spec(m, il);
    uint32_t pos = 0;
    for (int step = 0; pos < kTokens; step++) {
      const uint32_t limit = pos < kPrefill ? kPrefill : kTokens;
      const int T = int(std::min<uint32_t>(1 + step % 4, limit - pos));
      std::vector<float> H(size_t(T) * cfg.hc_dim()), mid(H.size()), out(H.size());
      for (float& v : H) v = nd(rng);
      std::vector<int32_t> tokens(T);
      for (int32_t& t : tokens) t = tok(rng);
      std::vector<model::RowSlot> rows(T);
      for (int t = 0; t < T; t++) rows[t] = model::RowSlot{&cpu_states, pos + uint32_t(t), nullptr};
      model::block_forward(m, spec, rows.data(), tokens.data(), H.data(), T, mid.data(), out.data(), cs);
      if (pos < kPrefill) {
        pos += uint32_t(T);
        if (pos == kPrefill) dst.upload(cpu_states[il]);  // the CPU's state continues on the device
        continue;
      }
      cuda::DeviceBuffer dH(H.size() * 4), dmid(H.size() * 4), dout(H.size() * 4), dtok(tokens.size() * 4);
      dH.upload(H.data(), H.size() * 4);
      dtok.upload(tokens.data(), tokens.size() * 4);
      model::device::attention_sublayer(dw, cfg, m.w.layers[il], m.rope[il], dst, pos, dH, T, dmid, ls, as);
      model::device::ffn_sublayer(dw, cfg, m.w.layers[il], il < cfg.n_hash_layer, cfg.swiglu_clamp[il], dtok, dmid, T,
                                  dout, ls);
      std::vector<float> got_mid(H.size()), got_out(H.size());
      dmid.download(got_mid.data(), got_mid.size() * 4);
      dout.download(got_out.data(), got_out.size() * 4);
      ASSERT_EQ(first_difference(got_mid, mid), "") << "attention, layer " << il << ", positions " << pos << "+" << T;
      ASSERT_EQ(first_difference(got_out, out), "") << "block, layer " << il << ", positions " << pos << "+" << T;
      pos += uint32_t(T);
    }
    const model::LayerState& want = cpu_states[il];
    EXPECT_EQ(dst.n_raw, want.n_raw);
    EXPECT_EQ(dst.comp_n, want.comp.n) << "layer " << il;
    EXPECT_EQ(dst.index_n, want.index_comp.n) << "layer " << il;
    if (il == 1) {
      EXPECT_NE(dst.raw_head, 0u);  // the ring wrapped on the device
    }
    if (il == 2) {
      EXPECT_GT(dst.index_n, cfg.idx_top_k);  // the indexer had to choose
    }
    if (il == 3) {
      EXPECT_EQ(dst.comp_n, 1u);  // the ratio-128 window closed on the device
    }
    // Back to the CPU layout: the same rows and windows as the CPU's own state.
    std::vector<model::LayerState> back = model::make_layer_states(cfg, kCapacity, 0);
    dst.download(back[il]);
    EXPECT_EQ(first_difference(back[il].raw, want.raw), "") << "raw ring, layer " << il;
    if (il >= 2) {
      EXPECT_EQ(first_difference(back[il].comp.data,
                                 std::vector<float>(want.comp.data.begin(),
                                                    want.comp.data.begin() + ptrdiff_t(want.comp.n * want.comp.dim))),
                "")
          << "compressed rows, layer " << il;
      EXPECT_EQ(first_difference(back[il].attn_cmp.kv, want.attn_cmp.kv), "") << "open window, layer " << il;
      EXPECT_EQ(first_difference(back[il].attn_cmp.score, want.attn_cmp.score), "") << "window scores, layer " << il;
    }
  }
}

}  // namespace
}  // namespace ds4
