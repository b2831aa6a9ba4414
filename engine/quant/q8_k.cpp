// Q8_K: the activation format for the K-quant and IQ2 expert dots (GGML block_q8_K layout,
// f32 d, 256 int8, 16 int16 sums of 16). Never a weight format here.
//
// Quantization (ds4.c ds4_quantize_row_q8_K, docs/quant.md §activation-quantization): per 256-block find the element
// with the largest |x| (first one wins: strict > scan) and keep its signed value `max`. If amax == 0 the block is all
// zero (d = 0). Otherwise iscale = -127.0f / max; q = lrintf(iscale * x) clamped to
// [-128, 127]; bsums[j] = Σ q[16j..16j+15]; d = 1.0f / iscale. Note the negative scale: the
// max element maps to exactly -127 and d has the opposite sign of max.
#include <cmath>
#include <cstring>

#include "engine/quant/act_quant.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / QK_K; i++)
    for (int j = 0; j < QK_K; j++) dst[i * QK_K + j] = b[i].d * static_cast<float>(b[i].qs[j]);
}

void quantize_act_q8_k(const float* src, void* dst, int64_t n) {
  BlockQ8_K* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / QK_K; b++) {
    const float* x = src + b * QK_K;
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < QK_K; j++) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = act::q8_k_iscale(max);
    for (int j = 0; j < QK_K; j++) y[b].qs[j] = act::to_int8(x[j], iscale);
    for (int j = 0; j < QK_K / 16; j++) {
      int sum = 0;
      for (int i = 0; i < 16; i++) sum += y[b].qs[j * 16 + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
    y[b].d = act::q8_k_d(iscale);
  }
}

}  // namespace ds4::quant::detail
