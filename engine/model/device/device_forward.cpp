// See device_forward.hpp. The order is forward.cpp's forward_rows: embed, blocks, head.
#include "engine/model/device/device_forward.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "engine/cuda/embed.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"

namespace ds4::model::device {

DeviceForward::DeviceForward(const Model::Impl& m, const std::vector<LayerState>& shapes,
                             cuda::WeightPlacement placement)
    : m_(m), dw_(m.file.base(), m.file.size(), placement), layers_(make_device_states(shapes)) {
  if (m.ex.exact) throw std::invalid_argument("the CUDA backend computes the Fast order only: load the model in Fast");
  if (shapes.size() != m.cfg.n_layer) throw std::invalid_argument("device forward: one layer state per layer");
}

void DeviceForward::forward(const int32_t* tokens, int T, uint32_t pos0, bool all_logits, float* logits) {
  const ModelConfig& cfg = m_.cfg;
  if (T <= 0) return;
  check_token_ids(cfg, tokens, T);
  const size_t hc = cfg.hc_dim();
  const cuda::DeviceSpan dtok = grown<int32_t>(tokens_, size_t(T)), error = grown<int32_t>(error_, 1);
  cuda::DeviceSpan H = grown(H_, size_t(T) * hc), mid = grown(H_mid_, size_t(T) * hc),
                   next = grown(H_next_, size_t(T) * hc);
  dtok.upload(tokens, size_t(T) * sizeof(int32_t));
  const int32_t zero = 0;
  error.upload(&zero, sizeof zero);
  cuda::embed(dtok, T, dw_.at(m_.w.token_embd), cfg.n_vocab, cfg.n_embd, cfg.n_hc, H, error);
  for (uint32_t il = 0; il < cfg.n_layer; il++) {
    const LayerWeights& lw = m_.w.layers[il];
    attention_sublayer(dw_, cfg, lw, m_.rope[il], layers_[il], pos0, H, T, mid, ls_, as_);
    ffn_sublayer(dw_, cfg, lw, il < cfg.n_hash_layer, cfg.swiglu_clamp[il], dtok, mid, T, next, ls_);
    std::swap(H, next);
  }
  const int rows = all_logits ? T : 1;
  const cuda::DeviceSpan Hsel = H.sub(size_t(T - rows) * hc * sizeof(float), size_t(rows) * hc * sizeof(float));
  const cuda::DeviceSpan out = grown(logits_, size_t(rows) * cfg.n_vocab);
  output_head(dw_, cfg, head_weights(m_.w), Hsel, rows, out, hs_);
  out.download(logits, size_t(rows) * cfg.n_vocab * sizeof(float));
  cuda::check_embed_error(error);
}

void DeviceForward::upload_state(const std::vector<LayerState>& from) {
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].upload(from.at(il));
}

void DeviceForward::download_state(std::vector<LayerState>& to) const {
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].download(to.at(il));
}

}  // namespace ds4::model::device
