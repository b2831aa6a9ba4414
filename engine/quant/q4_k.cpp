// Q4_K: 256-element blocks, 8 sub-blocks of 32 with 6-bit scale and 6-bit min packed in 12
// bytes, 4-bit levels. ds4.c has no CPU Q4_K kernel, so the exact dot order with Q8_K is defined
// here by analogy with ds4's Q2_K. The quantizer fits each sub-block (fit_scale_min, nmax 15),
// plain or importance-weighted (quantize_q4_k_weighted). Layout, order and quantizer:
// docs/quant.md §block-layouts, §exact-order-of-the-integer-dots, §quantizers.
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/kquant_fit.hpp"
#include "engine/quant/table_lookup.hpp"

namespace ds4::quant::detail {

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    float* y = dst + i * QK_K;
    for (int j = 0; j < 8; j++) {
      int sc, m;
      q4_k_scale_min(b[i].scales, j, sc, m);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
      const uint8_t* q = b[i].qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      for (int l = 0; l < 32; l++) y[32 * j + l] = dl * static_cast<float>((q[l] >> shift) & 15) - ml;
    }
  }
}

namespace {
void quantize_q4_k_impl(const float* src, void* dst, int64_t n, const float* importance) {
  BlockQ4_K* out = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float* x = src + i * QK_K;
    uint8_t L[QK_K], ls[8], lm[8];
    float w[QK_K];
    if (importance) element_weights(x, importance + i * QK_K, QK_K, 2.0f, w);
    BlockQ4_K& y = out[i];
    const SuperScales s = fit_super_block(x, 8, 32, 15, 63, ls, lm, L, importance ? w : nullptr);
    y.d = s.d;
    y.dmin = s.dmin;
    std::memset(y.scales, 0, sizeof(y.scales));
    for (int j = 0; j < 8; j++) {
      if (j < 4) {
        y.scales[j] = ls[j];
        y.scales[j + 4] = lm[j];
      } else {
        y.scales[j + 4] = static_cast<uint8_t>((ls[j] & 15) | (lm[j] & 15) << 4);
        y.scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
        y.scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
      }
    }
    for (int c = 0; c < 4; c++)
      for (int l = 0; l < 32; l++) y.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | L[64 * c + 32 + l] << 4);
  }
}
}  // namespace

void quantize_q4_k(const float* src, void* dst, int64_t n) { quantize_q4_k_impl(src, dst, n, nullptr); }
void quantize_q4_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_q4_k_impl(src, dst, n, importance);
}

// Exposed to the dot kernels (arch/) so all decode the packed 6-bit scales the same way.
void unpack_q4_k_scales(const uint8_t* s, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 8; j++) {
    int a, b;
    q4_k_scale_min(s, j, a, b);
    sc[j] = static_cast<uint8_t>(a);
    m[j] = static_cast<uint8_t>(b);
  }
}

}  // namespace ds4::quant::detail
