// AVX2 dots for the 32-element formats with a Q8_0 activation: Q8_0 and MXFP4. Integer block
// sums come from maddubs/madd (exact); eight blocks' sums are reduced together, then the f32
// accumulation runs block by block exactly like the scalar kernels (q8_0.cpp, mxfp4.cpp), so the
// results are bit-identical to them.
#include <immintrin.h>

#include "engine/quant/avx2/avx2_util.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Weight-format specific: scale factor of block b and its 32 int8 values.
struct Q8_0Weights {
  const BlockQ8_0* w;
  float scale(int64_t b) const { return avx2::h2f(w[b].d); }
  __m256i values(int64_t b) const { return load32(w[b].qs); }
};

struct Mxfp4Weights {
  const BlockMXFP4* w;
  __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  float scale(int64_t b) const { return e8m0_to_f32_half(w[b].e); }
  __m256i values(int64_t b) const {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    const __m128i m = _mm_set1_epi8(0x0f);
    const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
    return _mm256_shuffle_epi8(table, idx);
  }
};

template <class W>
float dot_blocks32(const W& w, const BlockQ8_0Act* x, int64_t nb) {
  float acc = 0.0f;
  int64_t b = 0;
  alignas(32) int32_t isum[8];
  for (; b + 8 <= nb; b += 8) {
    __m256i v[8];
    for (int k = 0; k < 8; k++) v[k] = avx2::dot_i8_32(w.values(b + k), load32(x[b + k].qs));
    _mm256_store_si256(reinterpret_cast<__m256i*>(isum), avx2::hsum8_i32(v));
    for (int k = 0; k < 8; k++) acc += w.scale(b + k) * x[b + k].d * static_cast<float>(isum[k]);
  }
  for (; b < nb; b++) {
    const int32_t s = avx2::hsum_i32(avx2::dot_i8_32(w.values(b), load32(x[b].qs)));
    acc += w.scale(b) * x[b].d * static_cast<float>(s);
  }
  return acc;
}

}  // namespace

float dot_q8_0_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32(Q8_0Weights{static_cast<const BlockQ8_0*>(w)}, static_cast<const BlockQ8_0Act*>(act), n / 32);
}

float dot_mxfp4_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32(Mxfp4Weights{static_cast<const BlockMXFP4*>(w)}, static_cast<const BlockQ8_0Act*>(act),
                      n / 32);
}

}  // namespace ds4::quant::detail
