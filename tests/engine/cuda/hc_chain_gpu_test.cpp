// The residual-stream kernels chained with the existing RMSNorm and matvec kernels the way the
// forward uses them, through the launchers, against the same chain of CPU Fast functions, bit for
// bit: HC pre (weightless RMSNorm of the flat streams, the F16 hc_fn matvec, split + weighted
// sum) and the output head (the same mix for the stream weights, the collapse, the weighted
// RMSNorm, the Q8_0 activation quantizer and the Q8_0 LM head matvec). This checks the layouts
// the kernels hand each other. 1, 3 and 8 tokens. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/act_quant.hpp"
#include "engine/cuda/hyper_connection.hpp"
#include "engine/cuda/matvec.hpp"
#include "engine/cuda/rms_norm.hpp"
#include "engine/model/hyper_connection.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::cuda::DeviceBuffer;
namespace quant = ds4::quant;
constexpr quant::Isa kFast{quant::Arch::Generic, quant::Order::Fast};
constexpr uint32_t kHc = 4, kD = 512, kIters = 20, kVocab = 300;
constexpr float kEps = 1e-6f, kHcEps = 1e-6f;

std::vector<uint8_t> quantize(quant::Type type, const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<uint8_t> q(size_t(rows) * quant::row_bytes(type, cols));
  for (int64_t r = 0; r < rows; r++)
    quant::quantize_row(type, w.data() + r * cols, q.data() + size_t(r) * quant::row_bytes(type, cols), cols, nullptr);
  return q;
}

// CPU: out[t][r] = the Fast dot of weight row r with f32 (F16 weight) or quantized activation row t.
std::vector<float> cpu_project(quant::Type type, const std::vector<uint8_t>& w, int64_t rows, int64_t cols,
                               const float* x, int T) {
  const quant::Type vt = quant::traits(type).vec_dot_type;
  const size_t act_bytes = quant::act_row_bytes(vt, cols), w_bytes = quant::row_bytes(type, cols);
  std::vector<uint8_t> act(act_bytes);
  std::vector<float> out(size_t(T) * rows);
  for (int t = 0; t < T; t++) {
    quant::quantize_activation(vt, x + size_t(t) * cols, act.data(), cols);
    for (int64_t r = 0; r < rows; r++)
      out[size_t(t) * rows + r] = quant::dot(type, w.data() + r * w_bytes, act.data(), cols, kFast);
  }
  return out;
}

TEST(HcChainGpu, PreAndHeadMatchTheCpuChain) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  ds4::model::Exec ex;
  ex.exact = false;
  ex.isa = quant::best_isa();
  const uint32_t hc = kHc * kD, mixn = (2 + kHc) * kHc;
  const auto fn = quantize(quant::Type::F16, randn(rng, size_t(mixn) * hc, 0.02f), mixn, hc);
  const auto head_fn = quantize(quant::Type::F16, randn(rng, size_t(kHc) * hc, 0.02f), kHc, hc);
  const auto lm = quantize(quant::Type::Q8_0, randn(rng, size_t(kVocab) * kD, 0.05f), kVocab, kD);
  const std::vector<float> scale = {0.3f, 0.7f, 1.9f}, head_scale = {0.8f};
  const auto base = randn(rng, mixn, 0.5f), head_base = randn(rng, kHc, 0.5f), norm_w = randn(rng, kD, 1.0f);
  const auto dfn = ds4::cuda::upload_weight(quant::Type::F16, fn.data(), mixn, hc);
  const auto dhead_fn = ds4::cuda::upload_weight(quant::Type::F16, head_fn.data(), kHc, hc);
  const auto dlm = ds4::cuda::upload_weight(quant::Type::Q8_0, lm.data(), kVocab, kD);
  auto dscale = upload(scale), dbase = upload(base), dhscale = upload(head_scale), dhbase = upload(head_base),
       dnorm_w = upload(norm_w);
  for (int T : {1, 3, 8}) {
    const auto H = randn(rng, size_t(T) * hc, 1.0f);
    // CPU: forward.cpp's hc_pre_batch and output_head.cpp's head, step by step.
    std::vector<float> flat(H.size()), x(size_t(T) * kD), y(size_t(T) * kD), norm(size_t(T) * kD);
    for (int t = 0; t < T; t++)
      ds4::model::rms_norm(ex, flat.data() + size_t(t) * hc, H.data() + size_t(t) * hc, nullptr, hc, kEps);
    const auto mix = cpu_project(quant::Type::F16, fn, mixn, hc, flat.data(), T);
    const auto pre = cpu_project(quant::Type::F16, head_fn, kHc, hc, flat.data(), T);
    for (int t = 0; t < T; t++) {
      ds4::model::HcSplit s;
      ds4::model::hc_split(mix.data() + size_t(t) * mixn, scale.data(), base.data(), kHc, kIters, kHcEps, false, s);
      ds4::model::hc_weighted_sum(H.data() + size_t(t) * hc, s.pre, kD, kHc, x.data() + size_t(t) * kD);
      float wt[kHc];
      for (uint32_t i = 0; i < kHc; i++)
        wt[i] = ds4::model::FastMath::sigmoid_stable(pre[size_t(t) * kHc + i] * head_scale[0] + head_base[i]) + kHcEps;
      ds4::model::hc_weighted_sum(H.data() + size_t(t) * hc, wt, kD, kHc, y.data() + size_t(t) * kD);
      ds4::model::rms_norm(ex, norm.data() + size_t(t) * kD, y.data() + size_t(t) * kD, norm_w.data(), kD, kEps);
    }
    const auto logits = cpu_project(quant::Type::Q8_0, lm, kVocab, kD, norm.data(), T);

    auto dH = upload(H);
    DeviceBuffer dflat(H.size() * sizeof(float)), dmix(mix.size() * sizeof(float)), dpre(pre.size() * sizeof(float)),
        dsplit(size_t(T) * mixn * sizeof(float)), dx(x.size() * sizeof(float)), dy(y.size() * sizeof(float)),
        dnorm(norm.size() * sizeof(float)), dact(size_t(T) * quant::act_row_bytes(quant::Type::Q8_0, kD)),
        dlogits(logits.size() * sizeof(float));
    ds4::cuda::rms_norm(dH, {}, dflat, T, hc, kEps);
    ds4::cuda::matvec(dfn, dflat, hc * sizeof(float), T, dmix);
    ds4::cuda::hc_pre(dH, dmix, dscale, dbase, T, kHc, kD, int32_t(kIters), kHcEps, dsplit, dx);
    EXPECT_EQ(first_difference(download(dmix, mix.size()), mix), "") << "mix, T " << T;
    EXPECT_EQ(first_difference(download(dx, x.size()), x), "") << "HC pre x, T " << T;
    ds4::cuda::matvec(dhead_fn, dflat, hc * sizeof(float), T, dpre);
    ds4::cuda::hc_head_collapse(dpre, dhscale, dhbase, dH, T, kHc, kD, kHcEps, dy);
    ds4::cuda::rms_norm(dy, dnorm_w, dnorm, T, kD, kEps);
    ds4::cuda::quantize_activation(quant::Type::Q8_0, dnorm, T, kD, dact);
    ds4::cuda::matvec(dlm, dact, quant::act_row_bytes(quant::Type::Q8_0, kD), T, dlogits);
    EXPECT_EQ(first_difference(download(dy, y.size()), y), "") << "head collapse, T " << T;
    EXPECT_EQ(first_difference(download(dlogits, logits.size()), logits), "") << "logits, T " << T;
  }
}

}  // namespace
