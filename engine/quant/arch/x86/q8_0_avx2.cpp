// AVX2 dots for the 32-element formats with a Q8_0 activation: Q8_0 and MXFP4. Integer block
// sums come from maddubs/madd (exact); eight blocks' sums are reduced together, then the f32
// accumulation runs block by block exactly like the scalar kernels (q8_0.cpp, mxfp4.cpp), so the
// results are bit-identical to them. The *_fast kernels take the same integer sums into the Fast
// order's eight slices (docs/arithmetic.md §slices), one slice per lane.
#include <immintrin.h>

#include <utility>

#include "engine/quant/arch/block_orders.hpp"
#include "engine/quant/arch/x86/avx2_util.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Weight-format specific: scale factor of block b and its 32 int8 values.
struct Q8_0Weights {
  const BlockQ8_0* w;
  float scale(int64_t b) const { return avx2::h2f(w[b].d); }
  __m256 scales8(int64_t b, int live) const { return avx2::f16_low8(avx2::dwords8(&w[b].d, sizeof(BlockQ8_0), live)); }
  __m256i values(int64_t b) const { return load32(w[b].qs); }
  const void* block(int64_t b) const { return w + b; }
};

struct Mxfp4Weights {
  const BlockMXFP4* w;
  __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  float scale(int64_t b) const { return e8m0_to_f32_half(w[b].e); }
  __m256 scales8(int64_t b, int live) const {  // e8m0_to_f32_half lane-wise
    const __m256i e = _mm256_and_si256(avx2::dwords8(&w[b].e, sizeof(BlockMXFP4), live), _mm256_set1_epi32(0xff));
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
  }
  const void* block(int64_t b) const { return w + b; }
  // The 16 bytes in both halves, shifted right by 0 (low half) and 4 (high half) in one srlv:
  // low nibbles then high nibbles, as table indices.
  __m256i values(int64_t b) const {
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs)));
    const __m256i idx =
        _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0f));
    return _mm256_shuffle_epi8(table, idx);
  }
};

template <class Sum, class W>
float dot_blocks32(const W& w, const BlockQ8_0Act* x, int64_t nb) {
  Sum sum;
  int64_t b = 0;
  alignas(32) int32_t isum[8];
  for (; b + 8 <= nb; b += 8) {
    __m256i v[8];
    for (int k = 0; k < 8; k++) v[k] = avx2::dot_i8_32(w.values(b + k), load32(x[b + k].qs));
    _mm256_store_si256(reinterpret_cast<__m256i*>(isum), avx2::hsum8_i32(v));
    for (int k = 0; k < 8; k++) sum.blocks32(b + k, w.scale(b + k), x[b + k].d, isum[k]);
  }
  for (; b < nb; b++)
    sum.blocks32(b, w.scale(b), x[b].d, avx2::hsum_i32(avx2::dot_i8_32(w.values(b), load32(x[b].qs))));
  return sum.result();
}

// Block b of one weight row against eight activation rows (lane t = row t): the scale products
// fl(scale_w * d_x_t) and the exact integer block sums as floats. Both orders' multi-row kernels
// start from these; they differ only in how the products enter the sums.
template <class W>
[[gnu::always_inline]] inline std::pair<__m256, __m256> block_rows8(const W& w, const BlockQ8_0Act* const x[8],
                                                                    int64_t b) {
  const __m256i wv = w.values(b);
  const __m256i aw = _mm256_sign_epi8(wv, wv);
  __m256i v[8];
  for (int t = 0; t < 8; t++)
    v[t] = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(load32(x[t][b].qs), wv)), _mm256_set1_epi16(1));
  const __m256 isum = _mm256_cvtepi32_ps(avx2::hsum8_i32(v));
  const __m256 dx =
      _mm256_set_ps(x[7][b].d, x[6][b].d, x[5][b].d, x[4][b].d, x[3][b].d, x[2][b].d, x[1][b].d, x[0][b].d);
  return {_mm256_mul_ps(_mm256_set1_ps(w.scale(b)), dx), isum};
}

// Up to eight activation rows against one weight row, vectorised across the rows: lane t of
// every vector belongs to activation row t, and computes exactly the single-row steps
// acc_t += (scale_w * d_x_t) * (float)isum_t -- the same f32 operations in the same order, only
// eight rows side by side -- so each output is bit-identical to dot_blocks32.
template <class W>
void dot_blocks32_multi(const W& w, const uint8_t* act, size_t stride, int n_act, int64_t nb, float* out) {
  for (int t0 = 0; t0 < n_act; t0 += 8) {
    const int nt = n_act - t0 < 8 ? n_act - t0 : 8;
    if (nt < 5) {  // eight lanes cost about as much as four single rows: run short tails singly
      for (int t = 0; t < nt; t++)
        out[t0 + t] = dot_blocks32<SerialSum>(
            w, reinterpret_cast<const BlockQ8_0Act*>(act + static_cast<size_t>(t0 + t) * stride), nb);
      continue;
    }
    const BlockQ8_0Act* x[8];
    for (int t = 0; t < 8; t++)  // lanes past the last row repeat it; their results are dropped
      x[t] = reinterpret_cast<const BlockQ8_0Act*>(act + static_cast<size_t>(t0 + (t < nt ? t : nt - 1)) * stride);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
      const auto [dwx, isum] = block_rows8(w, x, b);
      acc = _mm256_add_ps(acc, _mm256_mul_ps(dwx, isum));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (int t = 0; t < nt; t++) out[t0 + t] = lanes[t];
  }
}

// Fast order (docs/arithmetic.md §slices), one row: eight consecutive blocks are one block of every
// slice, so the row is read in one sequential stream and the slices are the eight lanes of one
// accumulator: per step one hsum8 of the integer sums and one vector FMA, the eight scales
// converted together in registers. Complete steps run branch-free; in a last, partial step the
// missing blocks get integer sum 0 and activation scale 0, and fma(0, 0, acc) leaves their
// lanes unchanged (acc is never -0: it starts at +0 and an exact-zero sum rounds to +0).
template <class W>
float dot_blocks32_fast(const W& w, const BlockQ8_0Act* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  const auto step = [&](int64_t b, int live) __attribute__((always_inline)) {
    __m256i v[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
      v[k] = k < live ? avx2::dot_i8_32(w.values(b + k), load32(x[b + k].qs)) : _mm256_setzero_si256();
    const __m256 isum = _mm256_cvtepi32_ps(avx2::hsum8_i32(v));
    const __m256 dx = _mm256_castsi256_ps(avx2::dwords8(&x[b].d, sizeof(BlockQ8_0Act), live));
    acc = _mm256_fmadd_ps(_mm256_mul_ps(w.scales8(b, live), dx), isum, acc);
  };
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) step(b, 8);
  if (b < nb) step(b, static_cast<int>(nb - b));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return fast::tree(lanes);
}

// Fast order for up to eight activation rows: lane t belongs to activation row t, and each
// slice has its own vector of accumulators; block b goes to slice b mod 8's vector in ascending
// order, and the tree combines the eight vectors lane by lane -- per row, the steps of
// dot_blocks32_fast.
template <class W>
void dot_blocks32_multi_fast(const W& w, const uint8_t* act, size_t stride, int n_act, int64_t nb, float* out) {
  for (int t0 = 0; t0 < n_act; t0 += 8) {
    const int nt = n_act - t0 < 8 ? n_act - t0 : 8;
    if (nt < 3) {
      for (int t = 0; t < nt; t++)
        out[t0 + t] =
            dot_blocks32_fast(w, reinterpret_cast<const BlockQ8_0Act*>(act + static_cast<size_t>(t0 + t) * stride), nb);
      continue;
    }
    const BlockQ8_0Act* x[8];
    for (int t = 0; t < 8; t++)
      x[t] = reinterpret_cast<const BlockQ8_0Act*>(act + static_cast<size_t>(t0 + (t < nt ? t : nt - 1)) * stride);
    __m256 acc[8];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++) {  // a fixed slice per k: the accumulators stay in registers
        const auto [sdx, isum] = block_rows8(w, x, b + k);
        acc[k] = _mm256_fmadd_ps(sdx, isum, acc[k]);
      }
    }
    for (int k = 0; b + k < nb; k++) {
      const auto [sdx, isum] = block_rows8(w, x, b + k);
      acc[k] = _mm256_fmadd_ps(sdx, isum, acc[k]);
    }
    const __m256 r = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])),
                                   _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7])));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, r);
    for (int t = 0; t < nt; t++) out[t0 + t] = lanes[t];
  }
}

}  // namespace

float dot_q8_0_fast_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32_fast(Q8_0Weights{static_cast<const BlockQ8_0*>(w)}, static_cast<const BlockQ8_0Act*>(act),
                           n / 32);
}

float dot_mxfp4_fast_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32_fast(Mxfp4Weights{static_cast<const BlockMXFP4*>(w)}, static_cast<const BlockQ8_0Act*>(act),
                           n / 32);
}

void dot_q8_0_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_blocks32_multi_fast(Q8_0Weights{static_cast<const BlockQ8_0*>(w)}, static_cast<const uint8_t*>(act), act_stride,
                          n_act, n / 32, out);
}

void dot_mxfp4_multi_fast_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_blocks32_multi_fast(Mxfp4Weights{static_cast<const BlockMXFP4*>(w)}, static_cast<const uint8_t*>(act), act_stride,
                          n_act, n / 32, out);
}

void dot_q8_0_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_blocks32_multi(Q8_0Weights{static_cast<const BlockQ8_0*>(w)}, static_cast<const uint8_t*>(act), act_stride, n_act,
                     n / 32, out);
}

void dot_mxfp4_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_blocks32_multi(Mxfp4Weights{static_cast<const BlockMXFP4*>(w)}, static_cast<const uint8_t*>(act), act_stride,
                     n_act, n / 32, out);
}

float dot_q8_0_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32<SerialSum>(Q8_0Weights{static_cast<const BlockQ8_0*>(w)}, static_cast<const BlockQ8_0Act*>(act),
                                 n / 32);
}

float dot_mxfp4_avx2(const void* w, const void* act, int64_t n) {
  return dot_blocks32<SerialSum>(Mxfp4Weights{static_cast<const BlockMXFP4*>(w)}, static_cast<const BlockQ8_0Act*>(act),
                                 n / 32);
}

}  // namespace ds4::quant::detail
