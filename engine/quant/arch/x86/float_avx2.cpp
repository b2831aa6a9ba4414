// AVX2 dots for the plain float weights, in two flavours:
//  * fast (dot_*_avx2): four 8-wide FMA accumulators, so the sum is reordered relative to the
//    exact scalar kernels in float_types.cpp;
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

template <class Weights>
float dot_fma(Weights w, const float* x, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(w.load8(i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(w.load8(i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(w.load8(i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(w.load8(i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(w.load8(i), _mm256_loadu_ps(x + i), acc0);
  float sum = avx2::hsum_f32(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; i++) sum += w.at(i) * x[i];
  return sum;
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

float dot_f32_avx2(const void* w, const void* act, int64_t n) { return dot_fma(F32Weights{floats(w)}, floats(act), n); }
float dot_f16_avx2(const void* w, const void* act, int64_t n) { return dot_fma(F16Weights{halves(w)}, floats(act), n); }
float dot_bf16_avx2(const void* w, const void* act, int64_t n) {
  return dot_fma(BF16Weights{halves(w)}, floats(act), n);
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
