// AVX2 dots of the K-quants (Q2_K, Q4_K) with a Q8_K activation. Levels are unsigned (0..3,
// 0..15), so maddubs(levels, q8) is exact with no sign trick; the sub-block scales multiply in
// through madd_epi16. Per block the integer sums isum and summs are exact, and the float steps
// are those of the order's policy (block_orders.hpp), so each order's results are bit-identical
// to the generic kernels of that order.
#include <immintrin.h>

#include <cstring>

#include "engine/quant/arch/block_orders.hpp"
#include "engine/quant/arch/x86/avx2_util.hpp"
#include "engine/quant/arch/x86/block_groups.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {
inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// pshufb controls that turn the 16 Q2_K scale bytes (in both 128-bit lanes) into int16 lanes:
// low lane all scale[2p], high lane all scale[2p+1] (0x80 zeroes the high byte).
struct PairShuffles {
  __m256i ctl[8];
  PairShuffles() {
    for (int p = 0; p < 8; p++) {
      alignas(32) uint8_t b[32];
      for (int i = 0; i < 16; i++) {
        b[i] = (i % 2) ? 0x80 : static_cast<uint8_t>(2 * p);
        b[16 + i] = (i % 2) ? 0x80 : static_cast<uint8_t>(2 * p + 1);
      }
      ctl[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
    }
  }
};

// Block i of a Q2_K row: the packed partials of isum (lanes 0-3) and summs (4-7), both exact.
[[gnu::always_inline]] inline __m256i q2_k_parts(const BlockQ2_K& x, const BlockQ8_K& y, const PairShuffles& sh) {
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  const __m128i scb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
  const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(scb, 4), m4));
  const __m256i summs = _mm256_madd_epi16(mins, load32(y.bsums));
  const __m256i scales = _mm256_broadcastsi128_si256(_mm_and_si128(scb, m4));
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int half = 0; half < 2; half++) {
    const __m256i bits = load32(x.qs + 32 * half);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
      const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3);
      const __m256i p = _mm256_maddubs_epi16(q, load32(y.qs + 128 * half + 32 * k));
      const __m256i sc16 = _mm256_shuffle_epi8(scales, sh.ctl[4 * half + k]);
      __m256i& acc = k % 2 ? acc1 : acc0;  // two independent add chains
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc16));
    }
  }
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(summs), _mm256_extracti128_si256(summs, 1));
  return avx2::pack_parts(_mm256_add_epi32(acc0, acc1), s4);
}

template <class Sum>
float dot_q2_k(const void* w, const void* act, int64_t n) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  static const PairShuffles shuffles;
  avx2::GroupSum<Sum> sum;
  avx2::groups8(
      n / QK_K, [&](int64_t i) { return q2_k_parts(x[i], y[i], shuffles); }, &x->d, sizeof(BlockQ2_K), &y->d,
      sizeof(BlockQ8_K), [&](const avx2::Group8& g) { sum.kquant(g); });
  return sum.result();
}

// Q4_K's twelve packed 6-bit scale bytes -> the eight sub-block scales (bytes 0-7) and the
// eight mins (bytes 8-15), unpack_q4_k_scales done with four 32-bit word operations.
inline __m128i q4_k_scales_mins(const uint8_t* packed12) {
  constexpr uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed12, 12);
  const uint32_t m47 = ((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4);
  const uint32_t m03 = u[1] & k6;
  const uint32_t s47 = (u[2] & k4) | (((u[0] >> 6) & k2) << 4);
  return _mm_set_epi32(static_cast<int>(m47), static_cast<int>(m03), static_cast<int>(s47),
                       static_cast<int>(u[0] & k6));
}

// pshufb controls broadcasting int16 lane j of a 128-bit half to every int16 lane.
struct WordBroadcasts {
  __m256i ctl[8];
  WordBroadcasts() {
    for (int j = 0; j < 8; j++) ctl[j] = _mm256_set1_epi16(static_cast<short>((2 * j + 1) << 8 | 2 * j));
  }
};

// Block i of a Q4_K row: the packed partials of isum (lanes 0-3) and summs (4-7), both exact.
[[gnu::always_inline]] inline __m256i q4_k_parts(const BlockQ4_K& x, const BlockQ8_K& y, const WordBroadcasts& wb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i sm = _mm256_cvtepu8_epi16(q4_k_scales_mins(x.scales));  // int16: scales 0-7, mins 8-15
  const __m256i bs = load32(y.bsums);
  const __m128i pair_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
  const __m128i summs = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1), pair_sums);
  const __m256i scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    const __m256i bits = load32(x.qs + 32 * c);
    const __m256i plo = _mm256_maddubs_epi16(_mm256_and_si256(bits, m4), load32(y.qs + 64 * c));
    const __m256i phi =
        _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), load32(y.qs + 64 * c + 32));
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(plo, _mm256_shuffle_epi8(scales, wb.ctl[2 * c])));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(phi, _mm256_shuffle_epi8(scales, wb.ctl[2 * c + 1])));
  }
  return avx2::pack_parts(_mm256_add_epi32(acc0, acc1), summs);
}

template <class Sum>
float dot_q4_k(const void* w, const void* act, int64_t n) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  static const WordBroadcasts wb;
  avx2::GroupSum<Sum> sum;
  avx2::groups8(
      n / QK_K, [&](int64_t i) { return q4_k_parts(x[i], y[i], wb); }, &x->d, sizeof(BlockQ4_K), &y->d,
      sizeof(BlockQ8_K), [&](const avx2::Group8& g) { sum.kquant(g); });
  return sum.result();
}

// ---- Several activation rows (up to 8) against one weight row: each weight block is decoded
// once, then every row's exact integer sums are packed (pack_parts) and reduced together, lane
// t = row t. Rows past n_act get zero sums and scale 0 and are dropped.

// The lanes of one block's eight rows into each row's order: SlicedSum keeps one vector per
// slice (lane t = row t's accumulator of that slice) and takes fast::kquant_update lane-wise,
// then the tree lane-wise; SerialSum takes the lanes row by row.
template <class Sum>
struct KRows;

template <>
struct KRows<SlicedSum> {
  __m256 acc[fast::kSlices];
  KRows() {
    for (__m256& a : acc) a = _mm256_setzero_ps();
  }
  void kquant(int64_t i, __m256 dx, float d, float dmin, __m256i isum, __m256i summs) {
    __m256& a = acc[fast::slice_of(i)];
    const __m256 dall = _mm256_mul_ps(dx, _mm256_set1_ps(d)), dm = _mm256_mul_ps(dx, _mm256_set1_ps(dmin));
    a = _mm256_fmadd_ps(dall, _mm256_cvtepi32_ps(isum), _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(summs), a));
  }
  void results(int nt, float* out) const {
    const __m256 r = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])),
                                   _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7])));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, r);
    for (int t = 0; t < nt; t++) out[t] = lanes[t];
  }
};

template <>
struct KRows<SerialSum> {
  SerialSum sums[8];
  void kquant(int64_t i, __m256 dx, float d, float dmin, __m256i isum, __m256i summs) {
    alignas(32) float x[8];
    alignas(32) int32_t is[8], ms[8];
    _mm256_store_ps(x, dx);
    _mm256_store_si256(reinterpret_cast<__m256i*>(is), isum);
    _mm256_store_si256(reinterpret_cast<__m256i*>(ms), summs);
    for (int t = 0; t < 8; t++) sums[t].kquant(i, x[t], d, dmin, is[t], ms[t]);
  }
  void results(int nt, float* out) const {
    for (int t = 0; t < nt; t++) out[t] = sums[t].result();
  }
};

// Drives the rows: decode(i) gives block i's decoded weights, row_parts(decoded, y) one row's
// packed partials; d_dmin(i) points at block i's f16 d and dmin.
template <class Sum, class Decode, class RowParts, class Scales>
void kquant_multi(const void* act, size_t act_stride, int n_act, int64_t nb, float* out, Decode decode,
                  RowParts row_parts, Scales d_dmin) {
  for (int t0 = 0; t0 < n_act; t0 += 8) {
    const int nt = n_act - t0 < 8 ? n_act - t0 : 8;
    const BlockQ8_K* y[8];
    for (int t = 0; t < 8; t++)
      y[t] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(act) +
                                                static_cast<size_t>(t0 + (t < nt ? t : nt - 1)) * act_stride);
    KRows<Sum> rows;
    for (int64_t i = 0; i < nb; i++) {
      const auto dec = decode(i);
      __m256i h[4];
      for (int k = 0; k < 4; k++) {
        const __m256i c0 = 2 * k < nt ? row_parts(dec, y[2 * k][i]) : _mm256_setzero_si256();
        h[k] = _mm256_hadd_epi32(c0, 2 * k + 1 < nt ? row_parts(dec, y[2 * k + 1][i]) : _mm256_setzero_si256());
      }
      const __m256i lo = _mm256_hadd_epi32(h[0], h[1]), hi = _mm256_hadd_epi32(h[2], h[3]);
      __m256 dx =
          _mm256_setr_ps(y[0][i].d, y[1][i].d, y[2][i].d, y[3][i].d, y[4][i].d, y[5][i].d, y[6][i].d, y[7][i].d);
      dx = _mm256_and_ps(dx, _mm256_castsi256_ps(
                                 _mm256_cmpgt_epi32(_mm256_set1_epi32(nt), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))));
      const uint16_t* dd = d_dmin(i);
      rows.kquant(i, dx, avx2::h2f(dd[0]), avx2::h2f(dd[1]), _mm256_permute2x128_si256(lo, hi, 0x20),
                  _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    rows.results(nt, out + t0);
  }
}

struct Q2KDecoded {
  __m256i lv[8], sc[8], mins;
};
struct Q4KDecoded {
  __m256i lv[8], sc[8];
  __m128i mins;
};

template <class Sum>
void dot_q2_k_multi(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  static const PairShuffles shuffles;
  const auto decode = [&](int64_t i) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m128i scb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    Q2KDecoded d;
    d.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(scb, 4), m4));
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_and_si128(scb, m4));
    for (int half = 0; half < 2; half++) {
      const __m256i bits = load32(x[i].qs + 32 * half);
      for (int k = 0; k < 4; k++) {
        d.lv[4 * half + k] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), m3);
        d.sc[4 * half + k] = _mm256_shuffle_epi8(scales, shuffles.ctl[4 * half + k]);
      }
    }
    return d;
  };
  const auto row_parts = [](const Q2KDecoded& d, const BlockQ8_K& y) {
    const __m256i summs = _mm256_madd_epi16(d.mins, load32(y.bsums));
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    for (int j = 0; j < 8; j += 2) {
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(d.lv[j], load32(y.qs + 32 * j)), d.sc[j]));
      acc1 = _mm256_add_epi32(
          acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(d.lv[j + 1], load32(y.qs + 32 * j + 32)), d.sc[j + 1]));
    }
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(summs), _mm256_extracti128_si256(summs, 1));
    return avx2::pack_parts(_mm256_add_epi32(acc0, acc1), s4);
  };
  kquant_multi<Sum>(act, act_stride, n_act, n / QK_K, out, decode, row_parts, [&](int64_t i) { return &x[i].d; });
}

template <class Sum>
void dot_q4_k_multi(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  static const WordBroadcasts wb;
  const auto decode = [&](int64_t i) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i sm = _mm256_cvtepu8_epi16(q4_k_scales_mins(x[i].scales));
    const __m256i scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
    Q4KDecoded d;
    d.mins = _mm256_extracti128_si256(sm, 1);
    for (int c = 0; c < 4; c++) {
      const __m256i bits = load32(x[i].qs + 32 * c);
      d.lv[2 * c] = _mm256_and_si256(bits, m4);
      d.lv[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      d.sc[2 * c] = _mm256_shuffle_epi8(scales, wb.ctl[2 * c]);
      d.sc[2 * c + 1] = _mm256_shuffle_epi8(scales, wb.ctl[2 * c + 1]);
    }
    return d;
  };
  const auto row_parts = [](const Q4KDecoded& d, const BlockQ8_K& y) {
    const __m256i bs = load32(y.bsums);
    const __m128i pair_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    for (int j = 0; j < 8; j += 2) {
      acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(d.lv[j], load32(y.qs + 32 * j)), d.sc[j]));
      acc1 = _mm256_add_epi32(
          acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(d.lv[j + 1], load32(y.qs + 32 * j + 32)), d.sc[j + 1]));
    }
    return avx2::pack_parts(_mm256_add_epi32(acc0, acc1), _mm_madd_epi16(d.mins, pair_sums));
  };
  kquant_multi<Sum>(act, act_stride, n_act, n / QK_K, out, decode, row_parts, [&](int64_t i) { return &x[i].d; });
}

}  // namespace

float dot_q2_k_avx2(const void* w, const void* act, int64_t n) { return dot_q2_k<SerialSum>(w, act, n); }
float dot_q2_k_fast_avx2(const void* w, const void* act, int64_t n) { return dot_q2_k<SlicedSum>(w, act, n); }
float dot_q4_k_avx2(const void* w, const void* act, int64_t n) { return dot_q4_k<SerialSum>(w, act, n); }
float dot_q4_k_fast_avx2(const void* w, const void* act, int64_t n) { return dot_q4_k<SlicedSum>(w, act, n); }
void dot_q2_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_q2_k_multi<SerialSum>(w, act, act_stride, n_act, n, out);
}
void dot_q2_k_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_q2_k_multi<SlicedSum>(w, act, act_stride, n_act, n, out);
}
void dot_q4_k_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_q4_k_multi<SerialSum>(w, act, act_stride, n_act, n, out);
}
void dot_q4_k_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_q4_k_multi<SlicedSum>(w, act, act_stride, n_act, n, out);
}

}  // namespace ds4::quant::detail
