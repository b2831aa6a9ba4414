// The device's MoE FFN (kernels/moe.cuh through engine/cuda/moe.cpp) and grouped output
// projection (grouped_output.cpp) against the CPU's Fast functions, bit for bit: the whole
// routed + shared FFN against model::moe_forward for T = 1..3 (the four routed formats, biased
// top-k and hash routing, ties), the router on 256 and 300 experts against route_token, and
// model::grouped_output. The whole FFN stays on the device: the re-quantizations between the
// steps are the device activation quantizers (act_quant.hpp). Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cuda/act_quant.hpp"
#include "engine/cuda/grouped_output.hpp"
#include "engine/cuda/matvec.hpp"
#include "engine/cuda/moe.hpp"
#include "tests/engine/cuda/moe_cases.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::cuda::DeviceBuffer;
using ds4::quant::Type;
namespace cu = ds4::cuda;
namespace model = ds4::model;

DeviceBuffer upload_bytes(const void* p, size_t n) {
  DeviceBuffer b(n);
  b.upload(p, n);
  return b;
}
DeviceBuffer upload_act(const model::QuantAct& a) { return upload_bytes(a.bytes.data(), a.row_bytes * a.rows); }

template <class T>
std::vector<T> fetch(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

TEST(MoeGpu, WholeFfnMatchesMoeForward) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  ds4::kernels::ThreadPool pool(1);
  const MoeShape shapes[] = {
      {Type::IQ2_XXS, 512, 256, 64, 6, false, false}, {Type::Q2_K, 256, 512, 40, 3, true, false},
      {Type::MXFP4, 64, 96, 40, 4, false, true},      {Type::Q4_K, 256, 256, 9, 2, false, false},
      {Type::IQ2_XXS, 256, 256, 256, 6, true, false}, {Type::Q2_K, 256, 256, 256, 6, false, true}};
  int T = 0;
  for (const MoeShape& s : shapes) {
    T = T % 3 + 1;
    if (on_emulator() && s.n_expert > 64) continue;  // EmulatedMoe covers the whole FFN there
    MoeCase c;
    make_moe_case(rng, s, T, pool, c);
    const int64_t D = s.n_embd, F = s.n_ff, E = s.n_expert, K = s.n_used, P = T * K;
    // Router: logits by the plain F16 matvec, then selection on the device.
    const auto gate_inp = cu::upload_weight(Type::F16, c.gate_inp.data(), E, D);
    auto xn = upload(c.xn);
    DeviceBuffer logits(4 * T * E), probs(4 * T * E), ids(4 * P), weights(4 * P), error(4);
    const int32_t zero = 0;
    error.upload(&zero, 4);
    cu::matvec(gate_inp, xn, 4 * D, T, logits);
    cu::RouterArgs ra;
    ra.n_expert = int32_t(E);
    ra.n_used = int32_t(K);
    ra.scale = c.cfg.expert_weight_scale;
    DeviceBuffer bias, tid2eid, tokens;
    if (s.hash) {
      tid2eid = upload_bytes(c.tid2eid.data(), c.tid2eid.size() * 4);
      tokens = upload_bytes(c.tokens.data(), c.tokens.size() * 4);
      ra.tid2eid = tid2eid;
      ra.tokens = tokens;
      ra.n_vocab = c.n_vocab;
    } else {
      bias = upload(c.bias);
      ra.bias = bias;
    }
    ra.error = error;
    ra.probs = probs;
    cu::moe_route(logits, T, ra, ids, weights);
    EXPECT_EQ(first_difference(download(logits, size_t(T * E)), c.logits), "") << "router logits";
    const auto got_ids = fetch<int32_t>(ids, size_t(P));
    const auto got_w = download(weights, size_t(P));
    EXPECT_EQ(fetch<int32_t>(error, 1)[0], 0);
    for (int t = 0; t < T; t++)
      for (int64_t k = 0; k < K; k++) {
        EXPECT_EQ(got_ids[t * K + k], c.choice[t].expert[k]) << "token " << t << " slot " << k;
        EXPECT_EQ(std::memcmp(&got_w[t * K + k], &c.choice[t].weight[k], 4), 0) << "token " << t << " slot " << k;
      }

    // Routed experts, the ids read on the device.
    const auto gate_e = cu::upload_experts(s.expert_type, c.gate_exps.data(), E, F, D);
    const auto up_e = cu::upload_experts(s.expert_type, c.up_exps.data(), E, F, D);
    const auto down_e = cu::upload_experts(s.expert_type, c.down_exps.data(), E, D, F);
    const Type vdt = ds4::quant::traits(s.expert_type).vec_dot_type;  // Q8_K, or Q8_0 for MXFP4
    const size_t xrb = ds4::quant::act_row_bytes(vdt, D), mrb = ds4::quant::act_row_bytes(vdt, F);
    DeviceBuffer dxq(xrb * T), dmidq(mrb * P);
    cu::quantize_activation(vdt, xn, T, D, dxq);
    DeviceBuffer gate(4 * P * F), up(4 * P * F), mid(4 * P * F), down(4 * P * D);
    cu::moe_expert_matvec(gate_e, ids, int(P), dxq, xrb, int(K), gate);
    cu::moe_expert_matvec(up_e, ids, int(P), dxq, xrb, int(K), up);
    cu::moe_swiglu(gate, up, weights, P, F, c.clamp, mid);
    cu::quantize_activation(vdt, mid, P, F, dmidq);
    cu::moe_expert_matvec(down_e, ids, int(P), dmidq, mrb, 1, down);

    // Shared expert: the plain Q8_0 matvec.
    const auto gsh = cu::upload_weight(Type::Q8_0, c.gate_sh.data(), F, D);
    const auto ush = cu::upload_weight(Type::Q8_0, c.up_sh.data(), F, D);
    const auto dsh = cu::upload_weight(Type::Q8_0, c.down_sh.data(), D, F);
    const size_t sxrb = ds4::quant::act_row_bytes(Type::Q8_0, D), smrb = ds4::quant::act_row_bytes(Type::Q8_0, F);
    DeviceBuffer dshq(sxrb * T), dsmq(smrb * T);
    cu::quantize_activation(Type::Q8_0, xn, T, D, dshq);
    DeviceBuffer sg(4 * T * F), su(4 * T * F), smid(4 * T * F), sd(4 * T * D), out(4 * T * D);
    cu::matvec(gsh, dshq, sxrb, T, sg);
    cu::matvec(ush, dshq, sxrb, T, su);
    cu::moe_swiglu(sg, su, {}, T, F, c.clamp, smid);
    cu::quantize_activation(Type::Q8_0, smid, T, F, dsmq);
    cu::matvec(dsh, dsmq, smrb, T, sd);
    cu::moe_sum(down, sd, T, int(K), D, out);
    EXPECT_EQ(first_difference(download(out, size_t(T * D)), c.want), "")
        << ds4::quant::type_info(s.expert_type).name << ", " << T << " tokens, " << E << " experts"
        << (s.hash ? ", hash" : "");
  }
}

// Pairs grouped by expert on the device (moe_group, moe_expert_grouped): the same output bits as
// the per-pair matvec, for every routed format, gate/up (a token row per K pairs) and down (a row
// per pair): an expert with 40 pairs (a GEMM tile of 32, then a matvec tile of 8), one with 11 (a
// GEMM tile), a bucket of 9 ids out of range (NaN rows as per pair, by the matvec), the rest
// small random tiles; 40 weight rows (a partial GEMM row tile) of 9 blocks of 256 (slice 0 takes
// two), so the GEMM's edges are crossed too.
TEST(MoeGpu, GroupedExpertsAreThePerPairMatvec) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(32);
  const int64_t E = 6, rows = 40, cols = 9 * 256, K = 3, T = 24, P = T * K;
  std::vector<int32_t> ids(P);
  for (int64_t p = 0; p < P; p++)
    ids[p] = p < 40 ? 2 : p <= 50 ? 4 : p <= 59 ? (p % 2 ? -1 : int32_t(E)) : int32_t(rng() % E);
  const DeviceBuffer dids = upload_bytes(ids.data(), ids.size() * 4);
  for (const Type type : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::MXFP4}) {
    const Type vdt = ds4::quant::traits(type).vec_dot_type;
    const std::vector<uint8_t> w = weight_bytes(type, E * rows, cols, uint32_t(rng()));
    const auto experts = cu::upload_experts(type, w.data(), E, rows, cols);
    const size_t arb = ds4::quant::act_row_bytes(vdt, cols);
    for (const int per : {int(K), 1}) {
      const int64_t n_act = (P + per - 1) / per;
      auto x = upload(randn(rng, size_t(n_act * cols), 1.0f));
      DeviceBuffer act(arb * n_act), want(4 * P * rows), got(4 * P * rows);
      cu::quantize_activation(vdt, x, int(n_act), cols, act);
      cu::moe_expert_matvec(experts, dids, int(P), act, arb, per, want);
      cu::MoeGroups g;
      g.n_pairs = int32_t(P);
      g.max_tiles = cu::moe_group_max_tiles(int(P), int(E));
      DeviceBuffer order(4 * P), tiles(12 * size_t(g.max_tiles)), n_tiles(4);
      g.order = order;
      g.tiles = tiles;
      g.n_tiles = n_tiles;
      cu::moe_group(dids, int(E), g);
      cu::moe_expert_grouped(experts, g, act, arb, per, got);
      const auto a = fetch<uint32_t>(want, size_t(P * rows)), b = fetch<uint32_t>(got, size_t(P * rows));
      EXPECT_EQ(a, b) << ds4::quant::type_info(type).name << ", " << per << " pairs per activation row";
      const int32_t n = fetch<int32_t>(n_tiles, 1)[0];
      const auto t = fetch<int32_t>(tiles, 3 * size_t(n));
      int gemm_tiles = 0, want_gemm = 0;
      for (int32_t i = 0; i < n; i++) gemm_tiles += t[3 * i + 2] > 8 && t[3 * i] != E;
      for (int32_t e = 0; e < E; e++) {  // tiles of 32, then the rest
        const auto c = std::count(ids.begin(), ids.end(), e);
        want_gemm += int(c / 32) + (c % 32 > 8 ? 1 : 0);
      }
      EXPECT_GE(want_gemm, 2);
      EXPECT_EQ(gemm_tiles, want_gemm) << "tiles of more than 8 pairs";
    }
  }
}

TEST(MoeGpu, RouterMatchesRouteToken) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  for (uint32_t E : {256u, 300u, 1024u})
    for (bool ties : {false, true}) {
      const int T = 5;
      const uint32_t K = 6;
      auto logits = randn(rng, size_t(T) * E, 2.0f);
      auto bias = randn(rng, E, 0.1f);
      if (ties) {
        for (auto& z : logits) z = float(int(z * 2.0f)) * 0.5f;
        for (auto& b : bias) b = float(int(b * 20.0f)) * 0.0625f;
      }
      model::ModelConfig cfg;
      cfg.n_expert = E;
      cfg.n_expert_used = K;
      cfg.expert_weight_scale = 2.5f;
      model::LayerWeights lw;
      lw.exp_probs_b = bind("exp_probs_b", Type::F32, {E}, bias.data(), bias.size() * 4);
      std::vector<float> want_p(logits.size());
      std::vector<model::RoutedChoice> want(T);
      for (int t = 0; t < T; t++) {
        model::router_probs(logits.data() + t * E, E, false, want_p.data() + t * E);
        model::route_token(cfg, lw, false, 0, want_p.data() + t * E, want[t]);
      }
      auto dl = upload(logits), db = upload(bias);
      DeviceBuffer probs(4 * T * E), ids(4 * T * K), weights(4 * T * K);
      cu::RouterArgs ra;
      ra.n_expert = int32_t(E);
      ra.n_used = int32_t(K);
      ra.scale = cfg.expert_weight_scale;
      ra.bias = db;
      ra.probs = probs;
      cu::moe_route(dl, T, ra, ids, weights);
      EXPECT_EQ(first_difference(download(probs, logits.size()), want_p), "") << E << " experts";
      const auto gi = fetch<int32_t>(ids, size_t(T) * K);
      const auto gw = download(weights, size_t(T) * K);
      for (int t = 0; t < T; t++)
        for (uint32_t k = 0; k < K; k++) {
          EXPECT_EQ(gi[t * K + k], want[t].expert[k]) << E << " experts, token " << t << (ties ? ", ties" : "");
          EXPECT_EQ(std::memcmp(&gw[t * K + k], &want[t].weight[k], 4), 0) << E << " experts, token " << t;
        }
    }
}

TEST(MoeGpu, GroupedOutputMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(32);
  ds4::kernels::ThreadPool pool(1);
  struct Shape {
    uint32_t n_head, head_dim, n_group, rank;
    int T;
  };
  // The last: DS4 Flash's shape (64 heads of 512, 8 groups of rank 1024).
  for (const Shape& s : {Shape{4, 64, 2, 37, 1}, Shape{8, 32, 4, 16, 2}, Shape{6, 96, 3, 10, 3}, Shape{2, 64, 1, 5, 8},
                         Shape{64, 512, 8, 1024, 1}, Shape{64, 512, 8, 1024, 3}}) {
    if (on_emulator() && s.rank > 100) continue;  // model-sized: minutes of fibers
    GroupedCase c;
    make_grouped_case(rng, s.n_head, s.head_dim, s.n_group, s.rank, s.T, pool, c);
    const auto w = cu::upload_weight(Type::Q8_0, c.w.data(), int64_t(s.n_group) * s.rank, c.cfg.group_dim());
    auto act = upload_act(c.qa);
    DeviceBuffer low(c.want.size() * 4);
    cu::grouped_output(w, int(s.n_group), act, c.qa.row_bytes, s.T, low);
    EXPECT_EQ(first_difference(download(low, c.want.size()), c.want), "")
        << s.n_group << " groups of " << s.rank << ", " << s.T << " tokens";
  }
}

TEST(MoeGpu, RejectsBadArguments) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer small(16), logits(4 * 64);
  cu::RouterArgs ra;
  ra.n_expert = 64;
  ra.n_used = 65;
  EXPECT_THROW(cu::moe_route(logits, 1, ra, small, small), std::invalid_argument);
  ra.n_used = 6;
  EXPECT_THROW(cu::moe_route(logits, 1, ra, small, small), std::invalid_argument);
  DeviceBuffer ids(4 * 6), weights(4 * 6);
  ra.probs = small;
  EXPECT_THROW(cu::moe_route(logits, 1, ra, ids, weights), std::invalid_argument);
  std::vector<uint8_t> q8(34 * 4);
  EXPECT_THROW(cu::upload_experts(Type::Q8_0, q8.data(), 1, 4, 32), std::invalid_argument);
  const auto e = cu::upload_experts(Type::MXFP4, q8.data(), 2, 2, 32);  // 2 x 2 rows of 17 bytes
  EXPECT_EQ(cu::experts_over(Type::MXFP4, e.data, 2, 2, 32).data.ptr(), e.data.ptr());
  EXPECT_THROW(cu::experts_over(Type::MXFP4, e.data, 2, 3, 32), std::invalid_argument);
}

}  // namespace
