// See device_head.hpp.
#include "engine/model/device/device_head.hpp"

#include "engine/cuda/hyper_connection.hpp"
#include "engine/cuda/rms_norm.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/device/device_linear.hpp"

namespace ds4::model::device {

void output_head(const DeviceWeights& dw, const ModelConfig& cfg, const HeadWeights& w, cuda::DeviceSpan H, int T,
                 cuda::DeviceSpan logits, HeadScratch& s) {
  const uint32_t n_hc = cfg.n_hc, D = cfg.n_embd, hc = cfg.hc_dim();
  const cuda::DeviceSpan flat = grown(s.flat, size_t(T) * hc), pre = grown(s.pre, size_t(T) * n_hc),
                         y = grown(s.y, size_t(T) * D), norm = grown(s.norm, size_t(T) * D);
  cuda::rms_norm(H, {}, flat, T, hc, cfg.rms_eps);
  project(dw.matrix(*w.hc_fn), flat, T, pre, s.act);
  cuda::hc_head_collapse(pre, dw.at(*w.hc_scale), dw.at(*w.hc_base), H, T, n_hc, D, cfg.hc_eps, y);
  cuda::rms_norm(y, dw.at(*w.norm), norm, T, D, cfg.rms_eps);
  project(dw.matrix(*w.output), norm, T, logits, s.act);
}

}  // namespace ds4::model::device
