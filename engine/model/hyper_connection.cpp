// Hyper-connection pre/post arithmetic (see hyper_connection.hpp). The operation order follows
// antirez/ds4's hc_split_sinkhorn_one / hc_post_one exactly: it is part of what makes the
// logits bit-identical to the reference. The arithmetic itself is hc_arith.hpp's, which the CUDA
// kernels share (docs/arithmetic.md §hc-sinkhorn).
#include "engine/model/hyper_connection.hpp"

#include <stdexcept>

#include "engine/model/hc_arith.hpp"
#include "engine/model/numerics.hpp"

namespace ds4::model {

void hc_split(const float* mix, const float* scale, const float* base, uint32_t n_hc, uint32_t iters, float eps,
              bool exact, HcSplit& out) {
  if (n_hc == 0 || n_hc > 16) throw std::logic_error("hc_split: unsupported hyper-connection count");
  if (exact) hc::split<ExactMath>(mix, scale, base, n_hc, iters, eps, out.pre, out.post, out.comb);
  else hc::split<hc::FastHcMath>(mix, scale, base, n_hc, iters, eps, out.pre, out.post, out.comb);
}

void hc_weighted_sum(const float* H, const float* w, uint32_t n_embd, uint32_t n_hc, float* out) {
  for (uint32_t d = 0; d < n_embd; d++) out[d] = hc::weighted_sum_at(H, w, n_embd, n_hc, d);
}

void hc_post(const float* y, const float* H, const HcSplit& split, uint32_t n_embd, uint32_t n_hc, float* out_H) {
  for (uint32_t dst = 0; dst < n_hc; dst++) {
    float* o = out_H + uint64_t(dst) * n_embd;
    for (uint32_t d = 0; d < n_embd; d++) o[d] = hc::post_at(y, H, split.post[dst], split.comb, n_embd, n_hc, dst, d);
  }
}

}  // namespace ds4::model
