// The MoE kernels (engine/cuda/kernels/moe.cuh) and the grouped output projection
// (grouped_output.cuh) run on the CPU by the CUDA-thread emulator with the launch shapes of
// engine/cuda/moe.cpp and grouped_output.cpp, against the CPU's Fast functions bit for bit: a
// whole routed + shared FFN (router logits, selection, expert matvecs addressed by the device-side
// ids, SwiGLU times the weight, down projections, sum) against model::moe_forward for T = 1..3,
// the router alone on larger expert counts with ties and NaNs, and model::grouped_output. The
// Q8_K/Q8_0 re-quantizations between the steps are the CPU's (the device quantizer is separate).
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/grouped_output.cuh"
#include "engine/cuda/kernels/moe.cuh"
//
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/model/moe.hpp"
#include "tests/engine/cuda/moe_cases.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::quant::Type;
namespace emu = ds4::cuda::emu;
namespace model = ds4::model;

using MoeKernel = void (*)(const uint8_t*, int64_t, int32_t, int64_t, int64_t, const int32_t*, const uint8_t*, int64_t,
                           int32_t, float*);
MoeKernel moe_kernel(Type t) {
  switch (t) {
    case Type::MXFP4: return ds4_moe_matvec_mxfp4;
    case Type::Q2_K: return ds4_moe_matvec_q2_k;
    case Type::Q4_K: return ds4_moe_matvec_q4_k;
    default: return ds4_moe_matvec_iq2_xxs;
  }
}
using Q80Kernel = void (*)(const uint8_t*, int64_t, int64_t, const uint8_t*, int64_t, float*);
const Q80Kernel kQ80[] = {ds4_matvec_q8_0_w1, ds4_matvec_q8_0_w2, ds4_matvec_q8_0_w3};
using F16Kernel = void (*)(const uint16_t*, int64_t, int64_t, const float*, int64_t, float*);
const F16Kernel kF16[] = {ds4_matvec_f16_w1, ds4_matvec_f16_w2, ds4_matvec_f16_w3};

unsigned blocks_of(int64_t rows) { return unsigned((rows + 3) / 4); }

// engine/cuda/moe.cpp's expert launch.
std::vector<float> expert_matvec(Type type, const std::vector<uint8_t>& w, int64_t n_expert, int64_t rows, int64_t cols,
                                 const std::vector<int32_t>& ids, const model::QuantAct& act, int pairs_per_act) {
  const int n_pairs = int(ids.size());
  std::vector<float> out(size_t(n_pairs) * rows);
  const int64_t expert_bytes = int64_t(ds4::quant::row_bytes(type, uint64_t(cols))) * rows;
  emu::launch(blocks_of(rows) * unsigned(n_pairs), 128, 0, [&] {
    moe_kernel(type)(w.data(), expert_bytes, int32_t(n_expert), rows, cols, ids.data(), act.bytes.data(),
                     int64_t(act.row_bytes), pairs_per_act, out.data());
  });
  return out;
}

std::vector<float> swiglu(const std::vector<float>& g, const std::vector<float>& u, const float* w, int64_t n_rows,
                          int64_t n_ff, float clamp) {
  std::vector<float> mid(g.size());
  const int64_t n = n_rows * n_ff;
  emu::launch(unsigned((n + 255) / 256), 256, 0,
              [&] { ds4_moe_swiglu(g.data(), u.data(), w, n_rows, n_ff, clamp, mid.data()); });
  return mid;
}

// The whole FFN as the device runs it, step by step.
std::vector<float> emulated_ffn(const MoeCase& c, std::vector<int32_t>& ids, std::vector<float>& weights) {
  const auto& s = c.shape;
  const int T = c.T;
  const int64_t D = s.n_embd, F = s.n_ff, E = s.n_expert, K = s.n_used;
  std::vector<float> logits(size_t(T) * E), probs(size_t(T) * E);
  emu::launch(blocks_of(E), 128, 0, [&] {
    kF16[T - 1](reinterpret_cast<const uint16_t*>(c.gate_inp.data()), E, D, c.xn.data(), D, logits.data());
  });
  EXPECT_EQ(first_difference(logits, c.logits), "") << "router logits";
  ids.assign(size_t(T) * K, 0);
  weights.assign(size_t(T) * K, 0.0f);
  int32_t error = 0;
  emu::launch(unsigned(T), 32, 0, [&] {
    ds4_moe_route(logits.data(), int32_t(E), int32_t(K), s.hash ? nullptr : c.bias.data(),
                  s.hash ? c.tid2eid.data() : nullptr, c.n_vocab, c.tokens.data(), c.cfg.expert_weight_scale,
                  probs.data(), ids.data(), weights.data(), &error);
  });
  EXPECT_EQ(error, 0);
  model::QuantAct xq, midq, shq;
  model::quantize_rows(s.expert_type, c.xn.data(), T, D, xq);
  const auto gate = expert_matvec(s.expert_type, c.gate_exps, E, F, D, ids, xq, int(K));
  const auto up = expert_matvec(s.expert_type, c.up_exps, E, F, D, ids, xq, int(K));
  const auto mid = swiglu(gate, up, weights.data(), T * K, F, c.clamp);
  model::quantize_rows(s.expert_type, mid.data(), int(T * K), F, midq);
  const auto down = expert_matvec(s.expert_type, c.down_exps, E, D, F, ids, midq, 1);

  model::quantize_rows(Type::Q8_0, c.xn.data(), T, D, shq);
  std::vector<float> sg(size_t(T) * F), su(size_t(T) * F), sd(size_t(T) * D);
  emu::launch(blocks_of(F), 128, 0,
              [&] { kQ80[T - 1](c.gate_sh.data(), F, D, shq.bytes.data(), int64_t(shq.row_bytes), sg.data()); });
  emu::launch(blocks_of(F), 128, 0,
              [&] { kQ80[T - 1](c.up_sh.data(), F, D, shq.bytes.data(), int64_t(shq.row_bytes), su.data()); });
  const auto smid = swiglu(sg, su, nullptr, T, F, c.clamp);
  model::quantize_rows(Type::Q8_0, smid.data(), T, F, shq);
  emu::launch(blocks_of(D), 128, 0,
              [&] { kQ80[T - 1](c.down_sh.data(), D, F, shq.bytes.data(), int64_t(shq.row_bytes), sd.data()); });

  std::vector<float> out(size_t(T) * D);
  emu::launch(unsigned((T * D + 255) / 256), 256, 0,
              [&] { ds4_moe_sum(down.data(), sd.data(), T, int32_t(K), D, out.data()); });
  return out;
}

void expect_routing(const MoeCase& c, const std::vector<int32_t>& ids, const std::vector<float>& weights) {
  const uint32_t K = c.shape.n_used;
  for (int t = 0; t < c.T; t++)
    for (uint32_t k = 0; k < K; k++) {
      EXPECT_EQ(ids[t * K + k], c.choice[t].expert[k]) << "token " << t << " slot " << k;
      EXPECT_EQ(std::memcmp(&weights[t * K + k], &c.choice[t].weight[k], 4), 0) << "token " << t << " slot " << k;
    }
}

TEST(EmulatedMoe, WholeFfnMatchesMoeForward) {
  std::mt19937 rng(30);
  ds4::kernels::ThreadPool pool(1);
  // More than 32 experts (two per lane), the four routed formats, both routings, ties.
  const MoeShape shapes[] = {{Type::IQ2_XXS, 256, 256, 40, 3, false, false},
                             {Type::Q2_K, 256, 256, 40, 3, true, false},
                             {Type::MXFP4, 64, 96, 40, 4, false, true},
                             {Type::Q4_K, 256, 256, 9, 2, false, false}};
  int T = 0;
  for (const MoeShape& s : shapes) {
    T = T % 3 + 1;  // 1, 2, 3, 1
    MoeCase c;
    make_moe_case(rng, s, T, pool, c);
    std::vector<int32_t> ids;
    std::vector<float> weights;
    const auto got = emulated_ffn(c, ids, weights);
    expect_routing(c, ids, weights);
    EXPECT_EQ(first_difference(got, c.want), "")
        << ds4::quant::type_info(s.expert_type).name << ", " << T << " tokens" << (s.hash ? ", hash" : "");
  }
}

// The router alone: 256 and 300 experts (a tail of lanes), six used, with ties on a coarse grid
// of logits and bias, and a NaN logit (lane 0's serial insertion) against router_probs and
// route_token.
TEST(EmulatedMoe, RouterMatchesRouteToken) {
  std::mt19937 rng(31);
  for (uint32_t E : {256u, 300u, 33u})
    for (int variant = 0; variant < 3; variant++) {
      const int T = 3;
      const uint32_t K = 6;
      auto logits = randn(rng, size_t(T) * E, 2.0f);
      std::vector<float> bias = randn(rng, E, 0.1f);
      if (variant == 1) {  // ties: logits and bias on grids
        for (auto& z : logits) z = float(int(z * 2.0f)) * 0.5f;
        for (auto& b : bias) b = float(int(b * 20.0f)) * 0.0625f;
      }
      if (variant == 2) {
        logits[5] = std::numeric_limits<float>::quiet_NaN();  // token 0
        logits[E + 7] = std::numeric_limits<float>::infinity();
        logits[2 * E + 1] = -std::numeric_limits<float>::infinity();
      }
      model::ModelConfig cfg;
      cfg.n_expert = E;
      cfg.n_expert_used = K;
      cfg.expert_weight_scale = 2.5f;
      model::LayerWeights lw;
      lw.exp_probs_b = bind("exp_probs_b", Type::F32, {E}, bias.data(), bias.size() * 4);
      std::vector<float> want_p(logits.size()), got_p(logits.size()), got_w(size_t(T) * K);
      std::vector<int32_t> got_i(size_t(T) * K);
      std::vector<model::RoutedChoice> want(T);
      for (int t = 0; t < T; t++) {
        model::router_probs(logits.data() + t * E, E, false, want_p.data() + t * E);
        model::route_token(cfg, lw, false, 0, want_p.data() + t * E, want[t]);
      }
      emu::launch(unsigned(T), 32, 0, [&] {
        ds4_moe_route(logits.data(), int32_t(E), int32_t(K), bias.data(), nullptr, 0, nullptr, cfg.expert_weight_scale,
                      got_p.data(), got_i.data(), got_w.data(), nullptr);
      });
      EXPECT_EQ(first_difference(got_p, want_p), "") << E << " experts, variant " << variant;
      for (int t = 0; t < T; t++)
        for (uint32_t k = 0; k < K; k++) {
          EXPECT_EQ(got_i[t * K + k], want[t].expert[k]) << E << " experts, variant " << variant << ", token " << t;
          EXPECT_EQ(std::memcmp(&got_w[t * K + k], &want[t].weight[k], 4), 0)
              << E << " experts, variant " << variant << ", token " << t << " slot " << k;
        }
    }
}

// A token id outside tid2eid (route_token throws): the kernel flags it and writes ids -1 (and
// no probabilities where none are asked for).
TEST(EmulatedMoe, RouterFlagsABadHashToken) {
  const int32_t E = 8, K = 2, n_vocab = 4;
  std::vector<float> logits(2 * E, 0.5f), weights(2 * K);
  std::vector<int32_t> tid2eid = {0, 1, 2, 3, 4, 5, 6, 7}, tokens = {3, 4}, ids(2 * K);
  int32_t error = 0;
  emu::launch(2, 32, 0, [&] {
    ds4_moe_route(logits.data(), E, K, nullptr, tid2eid.data(), n_vocab, tokens.data(), 1.0f, nullptr, ids.data(),
                  weights.data(), &error);
  });
  EXPECT_EQ(error, 1);
  EXPECT_EQ(ids[0], 6);
  EXPECT_EQ(ids[1], 7);
  EXPECT_EQ(ids[2], -1);
  EXPECT_EQ(ids[3], -1);
}

TEST(EmulatedMoe, GroupedOutputMatchesTheCpu) {
  std::mt19937 rng(32);
  ds4::kernels::ThreadPool pool(1);
  using GKernel = void (*)(const uint8_t*, int32_t, int64_t, int64_t, const uint8_t*, int64_t, float*);
  const GKernel kernels[] = {ds4_grouped_output_q8_0_w1, ds4_grouped_output_q8_0_w2, ds4_grouped_output_q8_0_w3,
                             ds4_grouped_output_q8_0_w4, ds4_grouped_output_q8_0_w5, ds4_grouped_output_q8_0_w6,
                             ds4_grouped_output_q8_0_w7, ds4_grouped_output_q8_0_w8};
  struct Shape {
    uint32_t n_head, head_dim, n_group, rank;
    int T;
  };
  // rank not a multiple of 4 (a partial thread block per group); 8 tokens, the widest launch.
  for (const Shape& s :
       {Shape{4, 64, 2, 37, 1}, Shape{8, 32, 4, 16, 2}, Shape{6, 96, 3, 10, 3}, Shape{2, 64, 1, 5, 8}}) {
    GroupedCase c;
    make_grouped_case(rng, s.n_head, s.head_dim, s.n_group, s.rank, s.T, pool, c);
    std::vector<float> got(c.want.size());
    const int64_t gd = c.cfg.group_dim();
    emu::launch(unsigned((s.rank + 3) / 4 * s.n_group), 128, 0, [&] {
      kernels[s.T - 1](c.w.data(), int32_t(s.n_group), s.rank, gd, c.qa.bytes.data(), int64_t(c.qa.row_bytes),
                       got.data());
    });
    EXPECT_EQ(first_difference(got, c.want), "") << s.n_group << " groups of " << s.rank << ", " << s.T << " tokens";
  }
}

}  // namespace
