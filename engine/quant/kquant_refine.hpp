#pragma once
// Internal: the last step of the K-quant weight quantizers. Given the per-sub-block (scale, min)
// fits and the f16 super-scales, chooses each sub-block's integer scale and min (trying the
// neighbours of the rounded values) and its levels so as to minimise the block's squared error
// with the values the decoder will actually produce.
#include <algorithm>
#include <cstdint>

#include "engine/quant/blocks.hpp"
#include "engine/quant/kquant_fit.hpp"

namespace ds4::quant::detail {

// x: sub-block values (n), d/dmin: the decoded super-scales; ls/lm in: rounded integer scale/min,
// out: the best neighbours; L out: levels.
inline void refine_sub_block(int n, int nmax, int qmax, const float* x, float d, float dmin, uint8_t& ls,
                             uint8_t& lm, uint8_t* L) {
  uint8_t cand[32];
  float best = -1;
  const int ls0 = ls, lm0 = lm;
  for (int a = std::max(0, ls0 - 1); a <= std::min(qmax, ls0 + 1); a++) {
    for (int b = std::max(0, lm0 - 1); b <= std::min(qmax, lm0 + 1); b++) {
      // the decoder computes (d*sc)*q - (dmin*m) in f32
      const float scale = d * static_cast<float>(a);
      const float min = dmin * static_cast<float>(b);
      const float err = assign_levels(n, nmax, x, scale, min, cand);
      if (best < 0 || err < best) {
        best = err;
        ls = static_cast<uint8_t>(a);
        lm = static_cast<uint8_t>(b);
        std::copy(cand, cand + n, L);
      }
    }
  }
}

}  // namespace ds4::quant::detail
