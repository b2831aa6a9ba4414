// AVX2 dot of IQ2_XXS weights with a Q8_K activation. Each group of 32 is four grid points
// gathered into one vector (8 bytes each, all magnitudes 8/25/43, so unsigned) and four sign
// patterns as ±1 bytes applied to the activation with sign_epi8; maddubs/madd give exact int32
// partials, scaled by the group's (2s+1) in integer. The block's integer sum is then combined
// in f32 by the order's policy (block_orders.hpp), so results are bit-identical to the generic
// kernel of that order.
// Requires activation bytes in [-127, 127] (sign_epi8 cannot negate -128), which
// quantize_activation guarantees.
#include <immintrin.h>

#include <cstring>

#include "engine/quant/arch/block_orders.hpp"
#include "engine/quant/arch/x86/avx2_util.hpp"
#include "engine/quant/arch/x86/block_groups.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

namespace {

inline __m256i gather4(const uint64_t* table, size_t i0, size_t i1, size_t i2, size_t i3) {
  return _mm256_set_epi64x(static_cast<long long>(table[i3]), static_cast<long long>(table[i2]),
                           static_cast<long long>(table[i1]), static_cast<long long>(table[i0]));
}

// Integer contribution (2s+1) * <signed grid, q8> of group `ib` as 8 int32 partials.
// g: the group's 8 bytes (4 grid indices, then the u32 with signs and scale).
inline __m256i group_dot(const uint8_t* g, const int8_t* q8) {
  uint32_t s;
  std::memcpy(&s, g + 4, 4);
  const uint64_t* pm = kIq2Signs.plus_minus_one;
  const __m256i grid = gather4(kIq2xxsGrid, g[0], g[1], g[2], g[3]);
  const __m256i sign = gather4(pm, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
  const __m256i q = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8)), sign);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(grid, q), _mm256_set1_epi16(static_cast<short>(2 * (s >> 28) + 1)));
}

// Block i's integer sum as packed partials (block_groups.hpp; no second sum).
[[gnu::always_inline]] inline __m256i iq2_xxs_parts(const BlockIQ2_XXS& x, const BlockQ8_K& y) {
  const uint8_t* q = reinterpret_cast<const uint8_t*>(x.qs);
  __m256i acc1 = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int ib = 0; ib < 8; ib += 2) {  // two independent chains: ~25% faster than one
    acc1 = _mm256_add_epi32(acc1, group_dot(q + 8 * ib, y.qs + 32 * ib));
    acc2 = _mm256_add_epi32(acc2, group_dot(q + 8 * ib + 8, y.qs + 32 * ib + 32));
  }
  return avx2::pack_parts(_mm256_add_epi32(acc1, acc2), _mm_setzero_si128());
}

// Eight blocks at a time (block_groups.hpp); the weight scale is the low half of the dword at
// x[i].d (the high half, grid bytes, lands in the unused dmin).
template <class Sum>
float dot_iq2_xxs(const void* w, const void* act, int64_t n) {
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  avx2::GroupSum<Sum> sum;
  avx2::groups8(
      n / QK_K, [&](int64_t i) { return iq2_xxs_parts(x[i], y[i]); }, &x->d, sizeof(BlockIQ2_XXS), &y->d,
      sizeof(BlockQ8_K), [&](const avx2::Group8& g) { sum.iq2_xxs(g); });
  return 0.125f * sum.result();
}

template <class Sum>
void dot_iq2_xxs_multi(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  constexpr int kMax = 8;
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const uint64_t* pm = kIq2Signs.plus_minus_one;
  for (int t0 = 0; t0 < n_act; t0 += kMax) {
    const int nt = n_act - t0 < kMax ? n_act - t0 : kMax;
    const uint8_t* act0 = static_cast<const uint8_t*>(act) + static_cast<size_t>(t0) * act_stride;
    Sum sums[kMax];
    for (int64_t i = 0; i < n / QK_K; i++) {
      // Decode the block's grid points, signs and scales once...
      __m256i grid[8], sign[8], scale[8];
      const uint8_t* q = reinterpret_cast<const uint8_t*>(x[i].qs);
      for (int ib = 0; ib < 8; ib++) {
        const uint8_t* g = q + 8 * ib;
        uint32_t s;
        std::memcpy(&s, g + 4, 4);
        grid[ib] = gather4(kIq2xxsGrid, g[0], g[1], g[2], g[3]);
        sign[ib] = gather4(pm, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
        scale[ib] = _mm256_set1_epi16(static_cast<short>(2 * (s >> 28) + 1));
      }
      const float dx = avx2::h2f(x[i].d);
      // ...and apply them to every activation row, with the single-row kernel's float steps.
      for (int t = 0; t < nt; t++) {
        const BlockQ8_K* y = reinterpret_cast<const BlockQ8_K*>(act0 + static_cast<size_t>(t) * act_stride) + i;
        __m256i acc1 = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib += 2) {
          const __m256i q1 =
              _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs + 32 * ib)), sign[ib]);
          const __m256i q2 = _mm256_sign_epi8(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y->qs + 32 * ib + 32)), sign[ib + 1]);
          acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(grid[ib], q1), scale[ib]));
          acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(_mm256_maddubs_epi16(grid[ib + 1], q2), scale[ib + 1]));
        }
        sums[t].iq2_xxs(i, dx, y->d, avx2::hsum_i32(_mm256_add_epi32(acc1, acc2)));
      }
    }
    for (int t = 0; t < nt; t++) out[t0 + t] = 0.125f * sums[t].result();
  }
}

}  // namespace

float dot_iq2_xxs_avx2(const void* w, const void* act, int64_t n) { return dot_iq2_xxs<SerialSum>(w, act, n); }
float dot_iq2_xxs_fast_avx2(const void* w, const void* act, int64_t n) { return dot_iq2_xxs<SlicedSum>(w, act, n); }
void dot_iq2_xxs_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_iq2_xxs_multi<SerialSum>(w, act, act_stride, n_act, n, out);
}
void dot_iq2_xxs_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_iq2_xxs_multi<SlicedSum>(w, act, act_stride, n_act, n, out);
}

}  // namespace ds4::quant::detail
