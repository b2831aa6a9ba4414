// Q2_K: 256-element blocks, 16 sub-blocks of 16 with 4-bit scale and 4-bit min, 2-bit levels.
// Dequantization is GGML's order and the dot with Q8_K is ds4.c's (x86 path); the SIMD versions
// (arch/) compute the integer sums with SIMD and do the same float ops. The quantizer fits each
// sub-block (fit_scale_min, nmax 3), plain or importance-weighted (quantize_q2_k_weighted).
// Layout, order and quantizer:
// docs/quant.md §block-layouts, §exact-order-of-the-integer-dots, §quantizers.
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/kquant_fit.hpp"

namespace ds4::quant::detail {

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  const BlockQ2_K* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    float* y = dst + i * QK_K;
    for (int e = 0; e < QK_K; e++) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t sc = b[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 15), ml = dmin * static_cast<float>(sc >> 4);
      const int q = (b[i].qs[half * 32 + l] >> (2 * k)) & 3;
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

namespace {
void quantize_q2_k_impl(const float* src, void* dst, int64_t n, const float* importance) {
  BlockQ2_K* out = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float* x = src + i * QK_K;
    uint8_t L[QK_K], ls[16], lm[16];
    float w[QK_K];
    if (importance) element_weights(x, importance + i * QK_K, QK_K, 1.0f, w);
    BlockQ2_K& y = out[i];
    const SuperScales s = fit_super_block(x, 16, 16, 3, 15, ls, lm, L, importance ? w : nullptr);
    y.d = s.d;
    y.dmin = s.dmin;
    for (int j = 0; j < 16; j++) y.scales[j] = static_cast<uint8_t>(ls[j] | lm[j] << 4);
    std::memset(y.qs, 0, sizeof(y.qs));
    for (int e = 0; e < QK_K; e++) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      y.qs[half * 32 + l] |= static_cast<uint8_t>(L[e] << (2 * k));
    }
  }
}
}  // namespace

void quantize_q2_k(const float* src, void* dst, int64_t n) { quantize_q2_k_impl(src, dst, n, nullptr); }
void quantize_q2_k_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_q2_k_impl(src, dst, n, importance);
}

}  // namespace ds4::quant::detail
