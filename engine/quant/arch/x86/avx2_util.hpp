#pragma once
// Internal: small AVX2 helpers shared by the kernels in this folder (compiled with -mavx2 -mfma
// -mf16c; include only from files in avx2/).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ds4::quant::detail::avx2 {

// Exact half -> float with F16C (same value as the software detail::f16_to_f32).
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

inline float hsum_f32(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Sums of 8 vectors of 8 int32 each: out lane k = Σ lanes of v[k].
inline __m256i hsum8_i32(const __m256i v[8]) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  // a = [v0 v1 v2 v3 partials of lanes 0-3 | same for lanes 4-7]; likewise b for v4..v7
  const __m256i lo = _mm256_permute2x128_si256(a, b, 0x20);
  const __m256i hi = _mm256_permute2x128_si256(a, b, 0x31);
  return _mm256_add_epi32(lo, hi);
}

// The dword at p of each of eight records `stride` bytes apart (lanes k >= live: 0, not read),
// built in registers: storing them one by one and reloading them as a vector would miss the
// store-to-load forwarding and hold up the float steps that wait on them.
inline __m256i dwords8(const void* p, int stride, int live) {
  const auto* c = static_cast<const char*>(p);
  const auto at = [&](int k) {
    int32_t d = 0;
    if (k < live) std::memcpy(&d, c + k * stride, 4);
    return d;
  };
  __m128i lo = _mm_cvtsi32_si128(at(0)), hi = _mm_cvtsi32_si128(at(4));
  lo = _mm_insert_epi32(lo, at(1), 1), hi = _mm_insert_epi32(hi, at(5), 1);
  lo = _mm_insert_epi32(lo, at(2), 2), hi = _mm_insert_epi32(hi, at(6), 2);
  lo = _mm_insert_epi32(lo, at(3), 3), hi = _mm_insert_epi32(hi, at(7), 3);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

// Eight f16 values in the low halves of dwords -> f32 (exact).
inline __m256 f16_low8(__m256i dw) {
  const __m256i p = _mm256_packus_epi32(_mm256_and_si256(dw, _mm256_set1_epi32(0xffff)), _mm256_setzero_si256());
  return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08)));
}

// int8 x int8 dot of 32 lanes as 8 int32 partial sums. Exact provided no lane of `act` is
// -128 (the sign trick negates act where w < 0); every activation quantizer here keeps
// activations in [-127, 127].
inline __m256i dot_i8_32(__m256i w, __m256i act) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(act, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

}  // namespace ds4::quant::detail::avx2
