#pragma once
// Hyper-connections on the device (kernels/hyper_connection.cuh), bit-identical to the CPU's
// Fast hc_split + hc_weighted_sum, hc_post (engine/model/hyper_connection.cpp) and the output
// head's stream collapse (engine/model/output_head.cpp); docs/arithmetic.md §hc-sinkhorn. The
// mix logits come from the matvec kernels over the weightless RMSNorm of the flat streams.
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

// HC pre for T tokens. H: T x n_hc x n_embd floats; mix: T x (2 + n_hc) * n_hc logits; scale: 3
// floats; base: (2 + n_hc) * n_hc floats. Writes split (T x (2 + n_hc) * n_hc floats: pre, post,
// comb as in HcSplit, compacted) and x (T x n_embd, the streams weighted by pre). n_hc in 1..16.
// Throws std::invalid_argument for a bad count or buffers too small. Asynchronous.
void hc_pre(DeviceSpan H, DeviceSpan mix, DeviceSpan scale, DeviceSpan base, int64_t T, int64_t n_hc, int64_t n_embd,
            int32_t sinkhorn_iters, float hc_eps, DeviceSpan split, DeviceSpan x);

// HC post for T tokens: out_H[t][dst] = post[dst] * y[t] + sum_src comb[dst + src*n_hc] * H[t][src].
// y: T x n_embd; H, out_H: T x n_hc x n_embd (distinct buffers); split as hc_pre writes it.
// Throws std::invalid_argument as hc_pre, and when out_H is H. Asynchronous.
void hc_post(DeviceSpan y, DeviceSpan H, DeviceSpan split, int64_t T, int64_t n_hc, int64_t n_embd, DeviceSpan out_H);

// The output head's collapse for T tokens: y[t] = sum_h H[t][h] * (sigmoid_stable(pre[t][h] *
// scale + base[h]) + hc_eps). pre: T x n_hc (the hc_fn projection of the normed streams); scale:
// 1 float; base: n_hc floats. Throws as hc_pre. Asynchronous.
void hc_head_collapse(DeviceSpan pre, DeviceSpan scale, DeviceSpan base, DeviceSpan H, int64_t T, int64_t n_hc,
                      int64_t n_embd, float hc_eps, DeviceSpan y);

}  // namespace ds4::cuda
