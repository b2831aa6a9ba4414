// AVX2 dots for the plain float weights, in two orders:
//  * Fast (dot_*_avx2, dot_*_multi_avx2): docs/arithmetic.md §float-dot, bit-identical to the
//    generic Fast kernels (dots_fast_generic.cpp): eight consecutive blocks of 32, one per slice,
//    reduced together so that lane s ends with slice s's block value;
//  * exact order (dot_*_avx2_exact): the same f32 (F16/BF16) or f64 (F32) products as the scalar
//    kernels -- a product of two floats is rounded the same way in a SIMD lane -- added one by one
//    in index order, so the result is bit-identical to dot_*_scalar while the conversions and
//    multiplies run 8 wide (about one element per add latency);
//  * exact order for several activation rows (dot_*_multi_avx2_exact, quant.hpp DotMultiFn): each
//    8 weights converted once, then per row the exact kernel's products and index-order adds (the
//    rows' add chains overlap). Each weight format is one small "lanes" type (8 weights as
//    floats, one weight as a float), so the loops are written once for F32, F16 and BF16.
#include <immintrin.h>

#include "engine/quant/arch/x86/avx2_util.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

struct F32Weights {
  const float* a;
  __m256 load8(int64_t i) const { return _mm256_loadu_ps(a + i); }
  float at(int64_t i) const { return a[i]; }
};

struct F16Weights {
  const uint16_t* h;
  __m256 load8(int64_t i) const { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))); }
  float at(int64_t i) const { return f16_to_f32(h[i]); }
};

struct BF16Weights {
  const uint16_t* h;
  __m256 load8(int64_t i) const {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
  float at(int64_t i) const { return bf16_to_f32(h[i]); }
};

// ---- Fast order (docs/arithmetic.md §float-dot): blocks of 32 products, each reduced by the
// halving tree; eight slices of blocks, each summed in order; the pairwise tree of the slices.

// The first two halvings of a block (i with i+16, then i+8): eight values left.
inline __m256 halve32(const __m256 v[4]) { return _mm256_add_ps(_mm256_add_ps(v[0], v[2]), _mm256_add_ps(v[1], v[3])); }

// halve32 of the complete block at element i0: inlined, so a group's eight blocks stay in
// registers (an out-of-line call per block spilled them all).
template <class Weights>
[[gnu::always_inline]] inline __m256 full_block(Weights w, const float* x, int64_t i0) {
  __m256 v[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) v[k] = _mm256_mul_ps(w.load8(i0 + 8 * k), _mm256_loadu_ps(x + i0 + 8 * k));
  return halve32(v);
}

// halve32 of block b where it may be short or past the end: missing products are +0.0, as the
// contract says (a block wholly past the end is all +0.0). Kept out of line: only the tail uses it.
template <class Weights>
[[gnu::noinline]] __m256 tail_block(Weights w, const float* x, int64_t n, int64_t b) {
  const int64_t i0 = b * 32;
  alignas(32) float p[32];
  for (int i = 0; i < 32; i++) p[i] = i0 + i < n ? w.at(i0 + i) * x[i0 + i] : 0.0f;
  __m256 v[4];
  for (int k = 0; k < 4; k++) v[k] = _mm256_load_ps(p + 8 * k);
  return halve32(v);
}

template <class Weights>
[[gnu::always_inline]] inline __m256 any_block(Weights w, const float* x, int64_t n, int64_t b) {
  return b * 32 + 32 <= n ? full_block(w, x, b * 32) : tail_block(w, x, n, b);
}

// The last three halvings (i with i+4, i+2, i+1) of eight blocks at once: u[s] holds block s's
// eight values; lane s of the result is block s's value. Each add pairs the same two values the
// scalar tree pairs; only the lanes they sit in differ.
[[gnu::always_inline]] inline __m256 finish8(const __m256 u[8]) {
  __m256 a[4];  // a[k] = [block k's 4 values | block k+4's 4 values] after the i+4 halving
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    a[k] = _mm256_add_ps(_mm256_permute2f128_ps(u[k], u[k + 4], 0x20), _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
  // i+2: [k0 v0,v1, k1 v0,v1 | ...] for the pairs (0,1) and (2,3)
  const __m256 b01 = _mm256_add_ps(_mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 b23 = _mm256_add_ps(_mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // i+1: lanes [0 1 2 3 | 4 5 6 7] = blocks in order
  return _mm256_add_ps(_mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// One row: eight consecutive blocks are one block of every slice, so each step reads the next 256
// elements in order and lane s of finish8 is slice s's block value. Complete groups of eight
// run branch-free; in the last group, blocks past the end add +0.0, which leaves an accumulator
// unchanged (it is never -0).
template <class Weights>
float dot_fast(Weights w, const float* x, int64_t n) {
  const int64_t nb = (n + 31) / 32;
  __m256 acc = _mm256_setzero_ps();
  int64_t b = 0;
  for (; (b + 8) * 32 <= n; b += 8) {
    __m256 u[8];  // unrolled: the eight block vectors stay in registers
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) u[k] = full_block(w, x, (b + k) * 32);
    acc = _mm256_add_ps(acc, finish8(u));
  }
  if (b < nb) {
    __m256 u[8];
    for (int k = 0; k < 8; k++) u[k] = b + k < nb ? any_block(w, x, n, b + k) : _mm256_setzero_ps();
    acc = _mm256_add_ps(acc, finish8(u));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return fast::tree(lanes);
}

// Up to 8 activation rows: lane t of the block values belongs to row t (the 8 rows' values of
// one block come out of finish8 together), block b goes to slice b mod 8's vector in ascending
// order, then the tree lane-wise.
template <class Weights>
void dot_fast_multi(Weights w, const uint8_t* act, size_t stride, int n_act, int64_t n, float* out) {
  const int64_t nb = (n + 31) / 32;
  for (int t0 = 0; t0 < n_act; t0 += 8) {
    const int nt = n_act - t0 < 8 ? n_act - t0 : 8;
    if (nt < 3) {
      for (int t = 0; t < nt; t++)
        out[t0 + t] = dot_fast(w, reinterpret_cast<const float*>(act + size_t(t0 + t) * stride), n);
      continue;
    }
    const float* x[8];
    for (int t = 0; t < 8; t++)
      x[t] = reinterpret_cast<const float*>(act + size_t(t0 + (t < nt ? t : nt - 1)) * stride);
    __m256 acc[8];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    const auto values = [&](int64_t b) {
      __m256 u[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; t++) u[t] = any_block(w, x[t], n, b);
      return finish8(u);
    };
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; k++) acc[k] = _mm256_add_ps(acc[k], values(b + k));
    }
    for (int k = 0; b + k < nb; k++) acc[k] = _mm256_add_ps(acc[k], values(b + k));
    const __m256 r = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])),
                                   _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7])));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, r);
    for (int t = 0; t < nt; t++) out[t0 + t] = lanes[t];
  }
}

// f32 products, f32 sum in index order (F16/BF16: ds4's dot_f16_row order).
template <class Weights>
float dot_exact_f32_sum(Weights w, const float* x, int64_t n) {
  alignas(32) float p[8];
  float acc = 0.0f;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_store_ps(p, _mm256_mul_ps(w.load8(i), _mm256_loadu_ps(x + i)));
    for (int k = 0; k < 8; k++) acc += p[k];
  }
  for (; i < n; i++) acc += w.at(i) * x[i];
  return acc;
}

// dot_exact_f32_sum for up to 8 activation rows (act + t * stride), weights converted once.
template <class Weights>
void dot_exact_f32_sum_multi(Weights w, const uint8_t* act, size_t stride, int n_act, int64_t n, float* out) {
  const float* x[8];
  float acc[8] = {};
  for (int t = 0; t < n_act; t++) x[t] = reinterpret_cast<const float*>(act + size_t(t) * stride);
  alignas(32) float p[8];
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 wv = w.load8(i);
    for (int t = 0; t < n_act; t++) {
      _mm256_store_ps(p, _mm256_mul_ps(wv, _mm256_loadu_ps(x[t] + i)));
      for (int k = 0; k < 8; k++) acc[t] += p[k];
    }
  }
  for (; i < n; i++) {
    const float wi = w.at(i);
    for (int t = 0; t < n_act; t++) acc[t] += wi * x[t][i];
  }
  for (int t = 0; t < n_act; t++) out[t] = acc[t];
}

template <class Weights>
void multi_in_groups_of_8(Weights w, const void* act, size_t stride, int n_act, int64_t n, float* out) {
  const auto* a = static_cast<const uint8_t*>(act);
  for (int t0 = 0; t0 < n_act; t0 += 8)
    dot_exact_f32_sum_multi(w, a + size_t(t0) * stride, stride, n_act - t0 < 8 ? n_act - t0 : 8, n, out + t0);
}

const float* floats(const void* p) { return static_cast<const float*>(p); }
const uint16_t* halves(const void* p) { return static_cast<const uint16_t*>(p); }

}  // namespace

float dot_f32_avx2(const void* w, const void* act, int64_t n) {
  return dot_fast(F32Weights{floats(w)}, floats(act), n);
}
float dot_f16_avx2(const void* w, const void* act, int64_t n) {
  return dot_fast(F16Weights{halves(w)}, floats(act), n);
}
float dot_bf16_avx2(const void* w, const void* act, int64_t n) {
  return dot_fast(BF16Weights{halves(w)}, floats(act), n);
}
void dot_f32_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(F32Weights{floats(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
}
void dot_f16_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(F16Weights{halves(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
}
void dot_bf16_multi_avx2(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  dot_fast_multi(BF16Weights{halves(w)}, static_cast<const uint8_t*>(act), act_stride, n_act, n, out);
}

float dot_f16_avx2_exact(const void* w, const void* act, int64_t n) {
  return dot_exact_f32_sum(F16Weights{halves(w)}, floats(act), n);
}
float dot_bf16_avx2_exact(const void* w, const void* act, int64_t n) {
  return dot_exact_f32_sum(BF16Weights{halves(w)}, floats(act), n);
}

void dot_f16_multi_avx2_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  multi_in_groups_of_8(F16Weights{halves(w)}, act, act_stride, n_act, n, out);
}
void dot_bf16_multi_avx2_exact(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out) {
  multi_in_groups_of_8(BF16Weights{halves(w)}, act, act_stride, n_act, n, out);
}

// F32 (ds4's matvec_f32_worker): f64 products of the widened operands, f64 sum in index order.
float dot_f32_avx2_exact(const void* w, const void* act, int64_t n) {
  const float* a = floats(w);
  const float* x = floats(act);
  alignas(32) double p[4];
  double acc = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d pa = _mm256_cvtps_pd(_mm_loadu_ps(a + i)), px = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    _mm256_store_pd(p, _mm256_mul_pd(pa, px));
    for (int k = 0; k < 4; k++) acc += p[k];
  }
  for (; i < n; i++) acc += static_cast<double>(a[i]) * static_cast<double>(x[i]);
  return static_cast<float>(acc);
}

}  // namespace ds4::quant::detail
