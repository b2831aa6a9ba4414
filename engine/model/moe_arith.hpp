#pragma once
// The router's and the experts' per-element arithmetic in the Fast order, written once as
// `__host__ __device__` functions that the CPU (moe.cpp, Exec.exact = false) and the CUDA kernels
// (engine/cuda/kernels/moe.cuh) both call, so CI runs the GPU's arithmetic on the CPU
// (docs/arithmetic.md §router-top-k). The selection itself is also here in ds4's serial form
// (insertion top-k); the GPU's warp-parallel selection is checked against it.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"
#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace ds4::model::moe_arith {

// The normalisation's lower bound on the sum of the selected probabilities (ds4's).
constexpr float kMinWeightSum = 6.103515625e-5f;

// sqrt(softplus(z)) with the Fast order's softplus and a correctly rounded square root.
DS4_HD float router_prob(float z) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(quant::fast::softplus(z));
#else
  return std::sqrt(quant::fast::softplus(z));
#endif
}

// "a ranks before b": higher score, equal scores by the lower index (NaN-free scores; the
// insertion below is the definition for every input).
DS4_HD bool ranks_before(float sa, int32_t ia, float sb, int32_t ib) { return sa > sb || (sa == sb && ia < ib); }

// ds4's topk_desc: insertion into a descending list; equal scores keep the earlier index first.
DS4_HD void topk_desc(const float* score, uint32_t n, uint32_t k, int32_t* idx) {
  for (uint32_t i = 0; i < k; i++) idx[i] = -1;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < k; j++)
      if (idx[j] < 0 || score[i] > score[idx[j]]) {
        for (uint32_t m = k - 1; m > j; m--) idx[m] = idx[m - 1];
        idx[j] = int32_t(i);
        break;
      }
}

// weight[i] = probs[expert[i]] / sum * scale, the sum in slot order from 0 and at least
// kMinWeightSum; two roundings per weight (the divide, then the scale).
DS4_HD void normalise_weights(const int32_t* expert, uint32_t k, const float* probs, float scale, float* weight) {
  float sum = 0.0f;
  for (uint32_t i = 0; i < k; i++) {
    weight[i] = probs[expert[i]];
    sum = quant::arith::add(sum, weight[i]);
  }
  if (sum < kMinWeightSum) sum = kMinWeightSum;
  for (uint32_t i = 0; i < k; i++) weight[i] = quant::arith::mul(quant::fast::div(weight[i], sum), scale);
}

// silu(min(g, clamp)) * clamp(u, +-clamp) with the Fast silu (no clamping when clamp <= 1e-6):
// moe.hpp's swiglu_clamped<FastMath>.
DS4_HD float swiglu(float g, float u, float clamp) {
  if (clamp > 1.0e-6f) {
    if (g > clamp) g = clamp;
    if (u > clamp) u = clamp;
    if (u < -clamp) u = -clamp;
  }
  return quant::arith::mul(quant::fast::silu(g), u);
}

// A routed expert's hidden element: the SwiGLU, then one more rounding for the router weight.
DS4_HD float routed_mid(float g, float u, float clamp, float w) { return quant::arith::mul(swiglu(g, u, clamp), w); }

}  // namespace ds4::model::moe_arith
