// See device_mtp.hpp. The steps and their order are mtp.cpp's mtp_rows.
#include "engine/model/device/device_mtp.hpp"

#include <string>
#include <utility>

#include "engine/cuda/elementwise.hpp"
#include "engine/cuda/embed.hpp"
#include "engine/cuda/placement.hpp"
#include "engine/cuda/rms_norm.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/device/device_forward.hpp"
#include "engine/model/device/device_linear.hpp"
#include "engine/model/mtp_impl.hpp"

namespace ds4::model::device {

std::shared_ptr<const DeviceWeights> place_sidecar_weights(const void* data, size_t bytes,
                                                           std::shared_ptr<const DeviceWeights> base, uint64_t reserve,
                                                           std::string& reason) {
  const cuda::Placement p = cuda::place_on_device(bytes, reserve);
  if (p.weights == WeightPlacement::DoesNotFit) {
    reason = "MTP block on the CPU: its weights do not fit the device (" + p.reason + ")";
    return nullptr;
  }
  reason = std::string("MTP block on the device, weights ") + cuda::placement_name(p.weights) + " (" + p.reason + ")";
  return std::make_shared<const DeviceWeights>(data, bytes, p.weights, nullptr, std::move(base));
}

DeviceMtp::DeviceMtp(const MtpModel::Impl& mi, const LayerState& shape)
    : mi_(mi), layers_(make_device_states({shape})) {
  if (!mi.device) throw std::invalid_argument("DeviceMtp: the MTP block's weights are not on the device");
}

void DeviceMtp::rows(DeviceMtpScratch& x, const int32_t* tokens, const float* P, int T, uint32_t pos0, float* last_H,
                     float* logits) {
  const Model::Impl& m = mi_.base->impl();
  const ModelConfig& c = m.cfg;
  const DeviceWeights& dw = *mi_.device;
  const int64_t D = c.n_embd, hc = int64_t(c.hc_dim()), n_hc = c.n_hc, R = int64_t(T) * n_hc;
  check_token_ids(c, tokens, T);
  const cuda::DeviceSpan dtok = grown<int32_t>(x.tokens, size_t(T)), error = grown<int32_t>(x.error, 1);
  const cuda::DeviceSpan e = grown(x.e, size_t(T * D)), en = grown(x.en, size_t(T * D)), E = grown(x.E, size_t(T * D));
  const cuda::DeviceSpan dP = grown(x.P, size_t(R * D)), pn = grown(x.pn, size_t(R * D)),
                         Hh = grown(x.Hh, size_t(R * D));
  const cuda::DeviceSpan Hin = grown(x.Hin, size_t(T * hc));
  const cuda::DeviceSpan mid = grown(x.mid, size_t(T * hc)), out = grown(x.out, size_t(T * hc));
  const size_t row = size_t(hc) * sizeof(float);
  const cuda::DeviceSpan last = out.sub(size_t(T - 1) * row, row);
  const cuda::DeviceSpan lg = logits ? grown(x.logits, c.n_vocab) : cuda::DeviceSpan{};
  // The step queued without a wait: one graph for a draft step or a short catch-up, as the
  // target's short passes (docs/cuda.md §graphs).
  const auto enqueue = [&] {
    dtok.upload(tokens, size_t(T) * sizeof(int32_t));
    const int32_t zero = 0;
    error.upload(&zero, sizeof zero);
    // e = RMSNorm(embed(t)) * enorm, projected by e_proj: the embedding in one stream.
    cuda::embed(dtok, T, dw.at(m.w.token_embd), c.n_vocab, D, 1, e, error);
    cuda::rms_norm(e, dw.at(mi_.enorm), en, T, D, c.rms_eps);
    project(dw.matrix(mi_.e_proj), en, T, E, x.act);
    // Each stream of P: RMSNorm * hnorm, projected by h_proj; then E added to every stream.
    dP.upload(P, size_t(R * D) * sizeof(float));
    cuda::rms_norm(dP, dw.at(mi_.hnorm), pn, R, D, c.rms_eps);
    project(dw.matrix(mi_.h_proj), pn, int(R), Hh, x.act);
    cuda::add_broadcast(E, Hh, Hin, T, n_hc, D);
    // The block: a ratio-0 layer on its own raw rows, then the FFN (top-k routing).
    x.runs.assign(1, RowRun{&layers_[0], pos0, T});
    attention_sublayer(dw, mi_.block_cfg, mi_.block, mi_.rope, x.runs, Hin, T, mid, x.ls, x.as);
    ffn_sublayer(dw, mi_.block_cfg, mi_.block, false, mi_.clamp, dtok, mid, T, out, x.ls);
    if (logits) {
      const HeadWeights hw{&mi_.hc_head_fn, &mi_.hc_head_scale, &mi_.hc_head_base, &mi_.norm, &m.w.output};
      output_head(dw, c, hw, last, 1, lg, x.hs);
    }
  };
  queue_pass(x.graph, T, enqueue);
  if (logits) lg.download(logits, size_t(c.n_vocab) * sizeof(float));
  last.download(last_H, row);
  x.graph.settle();
  cuda::check_embed_error(error);
}

}  // namespace ds4::model::device
