#pragma once
// The streaming KV compressor (engine/model/compressor.cpp) on the device, bit-identical to the
// CPU's Fast mode: T consecutive tokens of one compressor state, each stored into the window
// (kv row, score row + ape[pos % ratio]), and every completed window pooled
// (engine/model/compressor_pool.hpp with fast::exp) and, for ratio 4, rolled. Every step reads and
// writes one channel's columns only (j, and head_dim + j for ratio 4's two halves), so thread j
// runs the whole token sequence for its columns with no synchronisation.
#include <cstdint>

#include "engine/model/compressor_pool.hpp"
#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

namespace ds4::cuda::stages {
struct FastExp {
  __host__ __device__ float operator()(float x) const { return ds4::quant::fast::exp(x); }
};
}  // namespace ds4::cuda::stages

// st_kv, st_score: the state, rows x width floats (ratio 4: width 2 * hd, rows 8; else width hd,
// rows ratio), as model::CompressorState. kv_in, score_in: T x width (token t at position
// pos0 + t). ape: ratio x width f16. pooled: one hd-row per completed window, in order. Grid:
// ceil(hd / block) blocks; thread j < hd owns channel j.
extern "C" __global__ void ds4_compressor(float* st_kv, float* st_score, const float* kv_in, const float* score_in,
                                          const uint16_t* ape, int32_t ratio, int32_t hd, int32_t T, uint32_t pos0,
                                          float* pooled) {
  namespace arith = ds4::quant::arith;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= hd) return;
  const int coff = ratio == 4 ? 2 : 1;
  const int64_t width = int64_t(coff) * hd;
  int64_t w = 0;
  for (int32_t t = 0; t < T; t++) {
    const uint32_t pos = pos0 + static_cast<uint32_t>(t);
    const uint32_t pm = pos % static_cast<uint32_t>(ratio);
    const int64_t row = ratio == 4 ? ratio + pm : pm;
    for (int c = 0; c < coff; c++) {
      const int64_t col = c * hd + j;
      st_kv[row * width + col] = kv_in[t * width + col];
      st_score[row * width + col] =
          arith::add(score_in[t * width + col], arith::f16_to_f32(ape[int64_t(pm) * width + col]));
    }
    if ((pos + 1) % static_cast<uint32_t>(ratio) != 0) continue;
    pooled[w * hd + j] = ds4::model::cmp::pool_channel(st_score, st_kv, static_cast<uint32_t>(ratio),
                                                       static_cast<uint32_t>(hd), static_cast<uint32_t>(width),
                                                       static_cast<uint32_t>(j), ds4::cuda::stages::FastExp{});
    w++;
    if (ratio == 4)  // roll: the current window's rows 4..7 become rows 0..3
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < coff; c++) {
          const int64_t col = c * hd + j;
          st_kv[r * width + col] = st_kv[(4 + r) * width + col];
          st_score[r * width + col] = st_score[(4 + r) * width + col];
        }
  }
}
