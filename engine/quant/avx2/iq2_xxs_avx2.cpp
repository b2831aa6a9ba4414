// AVX2 dot of IQ2_XXS weights with a Q8_K activation. Each group of 32 is four grid points
// gathered into one vector (8 bytes each, all magnitudes 8/25/43, so unsigned) and four sign
// patterns as ±1 bytes applied to the activation with sign_epi8; maddubs/madd give exact int32
// partials, scaled by the group's (2s+1) in integer. The block's integer sum is then combined
// in f32 exactly as the scalar kernel (iq2_xxs.cpp) does, so results are bit-identical.
// Requires activation bytes in [-127, 127] (sign_epi8 cannot negate -128), which
// quantize_activation guarantees.
#include <immintrin.h>

#include <cstring>

#include "engine/quant/avx2/avx2_util.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

float dot_iq2_xxs_avx2(const void* w, const void* act, int64_t n) {
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  const uint64_t* grid = kIq2xxsGrid;
  const uint64_t* pm = kIq2Signs.plus_minus_one;
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = avx2::h2f(x[i].d) * y[i].d;
    uint32_t aux[16];
    std::memcpy(aux, x[i].qs, sizeof(aux));
    __m256i acc = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t a0 = aux[2 * ib], a1 = aux[2 * ib + 1];
      const __m256i g = _mm256_set_epi64x(static_cast<long long>(grid[a0 >> 24]),
                                          static_cast<long long>(grid[(a0 >> 16) & 255]),
                                          static_cast<long long>(grid[(a0 >> 8) & 255]),
                                          static_cast<long long>(grid[a0 & 255]));
      const __m256i s = _mm256_set_epi64x(static_cast<long long>(pm[(a1 >> 21) & 127]),
                                          static_cast<long long>(pm[(a1 >> 14) & 127]),
                                          static_cast<long long>(pm[(a1 >> 7) & 127]),
                                          static_cast<long long>(pm[a1 & 127]));
      const __m256i q8 = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 32 * ib)), s);
      const __m256i p = _mm256_maddubs_epi16(g, q8);
      const short ls = static_cast<short>(2 * (a1 >> 28) + 1);
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(ls)));
    }
    sumf += d * static_cast<float>(avx2::hsum_i32(acc));
  }
  return 0.125f * sumf;
}

}  // namespace ds4::quant::detail
