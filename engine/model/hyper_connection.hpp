#pragma once
// Hyper-connections (HC): the residual stream of DS4 is n_hc parallel copies of the hidden
// state. Before each sublayer, "pre" mixes the streams into one input vector with learned,
// input-dependent weights; after it, "post" writes the sublayer output back into every stream
// and mixes the old streams through a doubly-stochastic matrix obtained by Sinkhorn iterations.
#include <cstdint>

namespace ds4::model {

struct HcSplit {
  float pre[16];
  float post[16];
  float comb[256];  // comb[dst + src * n_hc]
};

// From the (2 + n_hc) * n_hc mix logits: pre = sigmoid(.) + eps, post = 2 sigmoid(.), and the
// combine matrix: softmax over the contiguous index, + eps, column normalise, then iters - 1
// rounds of row and column normalisation (ds4's order and its multiply-by-reciprocal steps), with
// glibc's exp when exact, the Fast order's own otherwise.
void hc_split(const float* mix, const float* scale, const float* base, uint32_t n_hc, uint32_t iters, float eps,
              bool exact, HcSplit& out);

// out[d] = sum_h H[h][d] * w[h], accumulated in stream order.
void hc_weighted_sum(const float* H, const float* w, uint32_t n_embd, uint32_t n_hc, float* out);

// H'[dst] = post[dst] * y + sum_src comb[dst + src*n_hc] * H[src].
void hc_post(const float* y, const float* H, const HcSplit& split, uint32_t n_embd, uint32_t n_hc, float* out_H);

}  // namespace ds4::model
