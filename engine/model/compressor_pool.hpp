#pragma once
// Internal: one channel of the KV compressor's softmax pooling as a `__host__ __device__` function
// (docs/arithmetic.md §compressor-pooling), so the CPU's compressor_pool (compressor.cpp, both
// modes) and the CUDA kernel (engine/cuda/kernels/compressor.cuh, Fast) run the same operations. S, K: the state's
// score and kv rows (`rows` x width); ratio 4 pools column j of the previous window (rows 0..3) with column head_dim +
// j of the current one (rows 4..7), other ratios column j of rows 0..ratio-1. `exp` is the mode's exponential.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

namespace ds4::model::cmp {

template <class Exp>
DS4_HD float pool_channel(const float* S, const float* K, uint32_t ratio, uint32_t hd, uint32_t width, uint32_t j,
                          Exp exp) {
  namespace arith = ds4::quant::arith;
  constexpr float kNegInf = -1.0e30f;
  float mx = kNegInf;
  if (ratio == 4) {
    for (uint32_t r = 0; r < ratio; r++) {
      const float sp = S[uint64_t(r) * width + j];
      const float sc = S[uint64_t(ratio + r) * width + hd + j];
      if (sp > mx) mx = sp;
      if (sc > mx) mx = sc;
    }
  } else {
    for (uint32_t r = 0; r < ratio; r++) {
      const float s = S[uint64_t(r) * width + j];
      if (s > mx) mx = s;
    }
  }
  if (mx <= kNegInf * 0.5f) return 0.0f;
  float denom = 0.0f, sum = 0.0f;
  if (ratio == 4) {
    for (uint32_t r = 0; r < ratio; r++) {
      const uint64_t ip = uint64_t(r) * width + j;
      const uint64_t ic = uint64_t(ratio + r) * width + hd + j;
      const float wp = exp(quant::fast::sub(S[ip], mx));
      const float wc = exp(quant::fast::sub(S[ic], mx));
      denom = arith::add(denom, arith::add(wp, wc));
      sum = arith::add(sum, arith::mul(wp, K[ip]));
      sum = arith::add(sum, arith::mul(wc, K[ic]));
    }
  } else {
    for (uint32_t r = 0; r < ratio; r++) {
      const uint64_t i = uint64_t(r) * width + j;
      const float w = exp(quant::fast::sub(S[i], mx));
      denom = arith::add(denom, w);
      sum = arith::add(sum, arith::mul(w, K[i]));
    }
  }
  return denom > 0.0f ? quant::fast::div(sum, denom) : 0.0f;
}

}  // namespace ds4::model::cmp
