// Output head; see output_head.hpp. Order follows ds4's output_hc_head_one / output_logits_one.
#include "engine/model/output_head.hpp"

#include "engine/model/hc_arith.hpp"
#include "engine/model/hyper_connection.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rms_norm.hpp"

namespace ds4::model {

void output_head(const Exec& ex, const ModelConfig& cfg, const HeadWeights& w, const float* H, int T, float* logits,
                 HeadScratch& s) {
  const uint32_t n_hc = cfg.n_hc, D = cfg.n_embd, hc = cfg.hc_dim();
  s.flat.resize(size_t(T) * hc);
  s.pre.resize(size_t(T) * n_hc);
  s.y.resize(size_t(T) * D);
  s.norm.resize(size_t(T) * D);
  for (int t = 0; t < T; t++)
    rms_norm(ex, s.flat.data() + size_t(t) * hc, H + size_t(t) * hc, nullptr, hc, cfg.rms_eps);
  project(ex, *w.hc_fn, s.flat.data(), T, s.pre.data(), s.q);
  const float scale = w.hc_scale->f32()[0];
  const float* base = w.hc_base->f32();
  for (int t = 0; t < T; t++) {
    float wt[16];
    for (uint32_t i = 0; i < n_hc; i++) {
      const float pre = s.pre[size_t(t) * n_hc + i];
      wt[i] = ex.exact ? hc::head_weight<ExactMath>(pre, scale, base[i], cfg.hc_eps)
                       : hc::head_weight<hc::FastHcMath>(pre, scale, base[i], cfg.hc_eps);
    }
    hc_weighted_sum(H + size_t(t) * hc, wt, D, n_hc, s.y.data() + size_t(t) * D);
    rms_norm(ex, s.norm.data() + size_t(t) * D, s.y.data() + size_t(t) * D, w.norm->f32(), D, cfg.rms_eps);
  }
  project(ex, *w.output, s.norm.data(), T, logits, s.q);
}

}  // namespace ds4::model
