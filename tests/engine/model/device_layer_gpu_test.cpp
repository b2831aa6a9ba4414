// The device FFN sublayer (engine/model/device/device_layer.cpp) on the real ds4-tiny weights
// against the CPU's Fast steps in forward.cpp's order (HC pre, moe_forward, HC post), bit for bit:
// a hash-routed layer (0) and a top-k layer (3), T = 1, 2 and 5, weights in place. Skips with the
// reason where no GPU is usable; model_device_emulated_tests runs it on the emulator.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/hyper_connection.hpp"
#include "engine/model/model.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/model/moe.hpp"
#include "engine/model/rms_norm.hpp"
#include "tests/engine/model/device_test_support.hpp"

namespace ds4 {
namespace {
using test::device::first_difference;

// forward.cpp's ffn_sublayer on the CPU, written out from the stage functions.
std::vector<float> cpu_ffn(const Model::Impl& m, uint32_t il, const std::vector<float>& H,
                           const std::vector<int32_t>& tokens) {
  const model::ModelConfig& cfg = m.cfg;
  const model::LayerWeights& lw = m.w.layers[il];
  const int T = int(tokens.size());
  const uint32_t hc = cfg.hc_dim(), D = cfg.n_embd, mixn = cfg.hc_mix();
  std::vector<float> flat(size_t(T) * hc), mix(size_t(T) * mixn), x(size_t(T) * D), xn(x.size()), out(x.size()),
      H_out(H.size());
  std::vector<model::HcSplit> split(T);
  model::QuantAct q;
  for (int t = 0; t < T; t++)
    model::rms_norm(m.ex, &flat[size_t(t) * hc], &H[size_t(t) * hc], nullptr, hc, cfg.rms_eps);
  model::project(m.ex, lw.hc_ffn.fn, flat.data(), T, mix.data(), q);
  for (int t = 0; t < T; t++) {
    model::hc_split(&mix[size_t(t) * mixn], lw.hc_ffn.scale.f32(), lw.hc_ffn.base.f32(), cfg.n_hc, cfg.sinkhorn_iters,
                    cfg.hc_eps, false, split[t]);
    model::hc_weighted_sum(&H[size_t(t) * hc], split[t].pre, D, cfg.n_hc, &x[size_t(t) * D]);
    model::rms_norm(m.ex, &xn[size_t(t) * D], &x[size_t(t) * D], lw.ffn_norm.f32(), D, cfg.rms_eps);
  }
  model::MoeScratch ms;
  model::moe_forward(m.ex, cfg, lw, il < cfg.n_hash_layer, cfg.swiglu_clamp[il], xn.data(), tokens.data(), T,
                     out.data(), ms);
  for (int t = 0; t < T; t++)
    model::hc_post(&out[size_t(t) * D], &H[size_t(t) * hc], split[t], D, cfg.n_hc, &H_out[size_t(t) * hc]);
  return H_out;
}

TEST(DeviceLayerGpu, FfnSublayerMatchesTheCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  const Model::Impl& m = test::device::fast_tiny()->impl();
  const model::ModelConfig& cfg = m.cfg;
  const model::device::DeviceWeights dw(m.file.base(), m.file.size(), cuda::WeightPlacement::InPlace);
  model::device::LayerScratch s;
  std::mt19937 rng(30);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> tok(0, int32_t(cfg.n_vocab) - 1);
  for (uint32_t il : {0u, 3u})
    for (int T : {1, 2, 5}) {
      std::vector<float> H(size_t(T) * cfg.hc_dim());
      for (float& v : H) v = nd(rng);
      std::vector<int32_t> tokens(T);
      for (int32_t& t : tokens) t = tok(rng);
      const std::vector<float> want = cpu_ffn(m, il, H, tokens);
      cuda::DeviceBuffer dH(H.size() * 4), dout(H.size() * 4), dtok(tokens.size() * 4);
      dH.upload(H.data(), H.size() * 4);
      dtok.upload(tokens.data(), tokens.size() * 4);
      model::device::ffn_sublayer(dw, cfg, m.w.layers[il], il < cfg.n_hash_layer, cfg.swiglu_clamp[il], dtok, dH, T,
                                  dout, s);
      std::vector<float> got(H.size());
      dout.download(got.data(), got.size() * 4);
      EXPECT_EQ(first_difference(got, want), "") << "layer " << il << ", T " << T;
    }
}

}  // namespace
}  // namespace ds4
