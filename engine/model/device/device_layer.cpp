// See device_layer.hpp. Every step names the CPU code it mirrors (forward.cpp hc_pre_batch and
// ffn_sublayer, moe.cpp moe_forward); the kernels' own contracts are in engine/cuda.
#include "engine/model/device/device_layer.hpp"

#include <stdexcept>

#include "engine/cuda/hyper_connection.hpp"
#include "engine/cuda/moe.hpp"
#include "engine/cuda/rms_norm.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/device/device_linear.hpp"

namespace ds4::model::device {

void hc_pre(const DeviceWeights& dw, const ModelConfig& cfg, const HcWeights& hw, const Tensor& norm,
            cuda::DeviceSpan H, int T, LayerScratch& s) {
  const uint32_t hc = cfg.hc_dim(), D = cfg.n_embd, mixn = cfg.hc_mix();
  const cuda::DeviceSpan flat = grown(s.flat, size_t(T) * hc), mix = grown(s.mix, size_t(T) * mixn),
                         split = grown(s.split, size_t(T) * mixn), x = grown(s.x, size_t(T) * D),
                         xn = grown(s.xn, size_t(T) * D);
  cuda::rms_norm(H, {}, flat, T, hc, cfg.rms_eps);
  project(dw.matrix(hw.fn), flat, T, mix, s.act);
  cuda::hc_pre(H, mix, dw.at(hw.scale), dw.at(hw.base), T, cfg.n_hc, D, int32_t(cfg.sinkhorn_iters), cfg.hc_eps, split,
               x);
  cuda::rms_norm(x, dw.at(norm), xn, T, D, cfg.rms_eps);
}

namespace {

cuda::DeviceExperts experts(const DeviceWeights& dw, const Tensor& t) {
  return cuda::experts_over(t.type, dw.at(t), int64_t(t.ne[2]), int64_t(t.ne[1]), int64_t(t.ne[0]));
}

}  // namespace

void ffn_sublayer(const DeviceWeights& dw, const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, float clamp,
                  cuda::DeviceSpan tokens, cuda::DeviceSpan H, int T, cuda::DeviceSpan H_out, LayerScratch& s,
                  cuda::DeviceSpan route_error) {
  const int64_t E = cfg.n_expert, K = cfg.n_expert_used, F = cfg.n_ff, D = cfg.n_embd, P = T * K;
  hc_pre(dw, cfg, lw.hc_ffn, lw.ffn_norm, H, T, s);
  const cuda::DeviceSpan xn = cuda::DeviceSpan(s.xn).sub(0, size_t(T * D) * sizeof(float));

  // Router: the logits by the plain projection, selection and weights on the device.
  const cuda::DeviceSpan logits = grown(s.logits, size_t(T * E)), ids = grown<int32_t>(s.ids, size_t(P)),
                         weights = grown(s.weights, size_t(P));
  // The caller's error word, read after its pass; else this layer's own, read here.
  const bool own_error = route_error.bytes() == 0;
  const cuda::DeviceSpan error = own_error ? grown<int32_t>(s.error, 1) : route_error.sub(0, sizeof(int32_t));
  project(dw.matrix(lw.ffn_gate_inp), xn, T, logits, s.act);
  cuda::RouterArgs ra;
  ra.n_expert = int32_t(E);
  ra.n_used = int32_t(K);
  ra.scale = cfg.expert_weight_scale;
  if (hash_layer) {
    if (own_error) {
      const int32_t zero = 0;
      error.upload(&zero, sizeof zero);
    }
    ra.tid2eid = dw.at(lw.ffn_gate_tid2eid);
    ra.n_vocab = int64_t(lw.ffn_gate_tid2eid.ne[1]);
    ra.tokens = tokens;
    ra.error = error;
  } else if (lw.exp_probs_b.present()) {
    ra.bias = dw.at(lw.exp_probs_b);
  }
  cuda::moe_route(logits, T, ra, ids, weights);

  // Routed experts: gate/up of every (token, slot) pair by the ids on the device, the weighted
  // SwiGLU, the re-quantized hidden rows through down. Over more than one token the pairs are
  // grouped by expert on the device first, so that an expert's rows are read once per tile of up
  // to 32 of its pairs rather than once per pair, on tensor cores where a tile has more than 8
  // (the same bits; docs/cuda.md §stages).
  size_t xq_row = 0, mq_row = 0;
  const cuda::DeviceSpan xq = activation_rows(lw.ffn_gate_exps.type, xn, T, D, s.xq, xq_row);
  const cuda::DeviceSpan gate = grown(s.gate, size_t(P * F)), up = grown(s.up, size_t(P * F)),
                         mid = grown(s.mid, size_t(P * F)), down = grown(s.down, size_t(P * D));
  cuda::MoeGroups groups;
  if (T > 1) {
    groups.n_pairs = int32_t(P);
    groups.max_tiles = cuda::moe_group_max_tiles(int(P), int(E));
    groups.order = grown<int32_t>(s.order, size_t(P));
    groups.tiles = grown<int32_t>(s.tiles, 3 * size_t(groups.max_tiles));
    groups.n_tiles = grown<int32_t>(s.n_tiles, 1);
    cuda::moe_group(ids, int(E), groups);
  }
  const auto routed = [&](const Tensor& t, cuda::DeviceSpan act, size_t act_row, int per, cuda::DeviceSpan out) {
    if (T > 1) cuda::moe_expert_grouped(experts(dw, t), groups, act, act_row, per, out);
    else cuda::moe_expert_matvec(experts(dw, t), ids, int(P), act, act_row, per, out);
  };
  routed(lw.ffn_gate_exps, xq, xq_row, int(K), gate);
  routed(lw.ffn_up_exps, xq, xq_row, int(K), up);
  cuda::moe_swiglu(gate, up, weights, P, F, clamp, mid);
  const cuda::DeviceSpan midq = activation_rows(lw.ffn_down_exps.type, mid, int(P), F, s.midq, mq_row);
  routed(lw.ffn_down_exps, midq, mq_row, 1, down);

  // The shared expert (weight 1), then the sum and HC post.
  const int64_t Fs = int64_t(lw.ffn_gate_shexp.ne[1]);
  const cuda::DeviceSpan sg = grown(s.sh_gate, size_t(T * Fs)), su = grown(s.sh_up, size_t(T * Fs)),
                         smid = grown(s.sh_mid, size_t(T * Fs)), sd = grown(s.sh_out, size_t(T * D)),
                         out = grown(s.out, size_t(T * D));
  project(dw.matrix(lw.ffn_gate_shexp), xn, T, sg, s.act);
  project(dw.matrix(lw.ffn_up_shexp), xn, T, su, s.act);
  cuda::moe_swiglu(sg, su, {}, T, Fs, clamp, smid);
  project(dw.matrix(lw.ffn_down_shexp), smid, T, sd, s.act);
  cuda::moe_sum(down, sd, T, int(K), D, out);
  cuda::hc_post(out, H, s.split, T, cfg.n_hc, D, H_out);
  if (hash_layer && own_error) check_route_error(error);
}

void check_route_error(cuda::DeviceSpan route_error) {
  if (cuda::take_error_word(route_error))
    throw std::runtime_error("device MoE: a token id the hash layer's tid2eid table cannot route");
}

}  // namespace ds4::model::device
