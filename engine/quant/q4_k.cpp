// Q4_K: 256-element blocks, 8 sub-blocks of 32 with 6-bit scale and 6-bit min packed in 12 bytes,
// 4-bit levels. Value = (d * sc) * q - (dmin * m) in f32 (GGML's dequantize_row_q4_K order).
// Scale/min unpacking (sub-block j): j < 4: sc = s[j] & 63, m = s[j+4] & 63;
//   j >= 4: sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4, m = (s[j+4] >> 4) | (s[j] >> 6) << 4.
// Chunk c = 0..3: low nibbles of qs[32c..32c+31] are elements 64c+l, high nibbles 64c+32+l.
//
// Dot with Q8_K. ds4.c has no CPU Q4_K kernel (Q4_K experts exist only in the high-memory GGUF
// and run on the GPU there), so the exact order is defined here by analogy with ds4's Q2_K:
// per block i in order:
//   summs = Σ_{j<8} m_j * (bsums[2j] + bsums[2j+1])      (int, exact)
//   isum  = Σ_{j<8} sc_j * <q4_j, q8_j>_32                 (int, exact)
//   dall = y.d * f16(x.d); dmin = y.d * f16(x.dmin)
//   sumf += dall * (float)isum - dmin * (float)summs
//
// Quantizer: per sub-block fit_scale_min (nmax 15), scales/mins to 6 bits against f16 super-
// scales max/63, then each sub-block's integer scale/min refined among neighbours. The weighted
// form (quantize_q4_k_weighted) fits the importance-weighted error with the weights
// importance_i * sqrt(2*mean(x²) + x_i²) (docs/quant.md §importance-weighted-quantization).
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/kquant_fit.hpp"

namespace ds4::quant::detail {

namespace {
inline void scale_min_k4(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
}  // namespace

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    float* y = dst + i * QK_K;
    for (int j = 0; j < 8; j++) {
      int sc, m;
      scale_min_k4(j, b[i].scales, sc, m);
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
    scale_min_k4(j, s, a, b);
    sc[j] = static_cast<uint8_t>(a);
    m[j] = static_cast<uint8_t>(b);
  }
}

}  // namespace ds4::quant::detail
