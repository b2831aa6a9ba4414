// AVX2 dots for the plain float weights (fast mode: four 8-wide FMA accumulators, so the sum is
// reordered relative to the exact scalar kernels in float_types.cpp).
#include <immintrin.h>

#include "engine/quant/avx2/avx2_util.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

template <class Load, class Elem>
float dot_fma(const float* x, int64_t n, Load load, Elem scalar_elem) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
         acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load(i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(load(i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load(i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load(i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(i), _mm256_loadu_ps(x + i), acc0);
  float sum = avx2::hsum_f32(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; i++) sum += scalar_elem(i) * x[i];
  return sum;
}

}  // namespace

float dot_f32_avx2(const void* w, const void* act, int64_t n) {
  const float* a = static_cast<const float*>(w);
  return dot_fma(static_cast<const float*>(act), n, [a](int64_t i) { return _mm256_loadu_ps(a + i); },
                 [a](int64_t i) { return a[i]; });
}

float dot_f16_avx2(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  return dot_fma(
      static_cast<const float*>(act), n,
      [h](int64_t i) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))); },
      [h](int64_t i) { return f16_to_f32(h[i]); });
}

float dot_bf16_avx2(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  return dot_fma(
      static_cast<const float*>(act), n,
      [h](int64_t i) {
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
      },
      [h](int64_t i) { return bf16_to_f32(h[i]); });
}

}  // namespace ds4::quant::detail

// Exact-order variants: the same f32 (F16/BF16) or f64 (F32) products as the scalar kernels --
// a product of two floats is rounded the same way in a SIMD lane -- added one by one in index
// order, so the result is bit-identical to dot_*_scalar while the conversions and multiplies
// run 8 wide. The serial add chain bounds these at about one element per add latency.
namespace ds4::quant::detail {

float dot_f16_avx2_exact(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  const float* x = static_cast<const float*>(act);
  alignas(32) float p[8];
  float acc = 0.0f;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 wf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    _mm256_store_ps(p, _mm256_mul_ps(wf, _mm256_loadu_ps(x + i)));
    for (int k = 0; k < 8; k++) acc += p[k];
  }
  for (; i < n; i++) acc += f16_to_f32(h[i]) * x[i];
  return acc;
}

float dot_bf16_avx2_exact(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  const float* x = static_cast<const float*>(act);
  alignas(32) float p[8];
  float acc = 0.0f;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
    _mm256_store_ps(p, _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(u, 16)), _mm256_loadu_ps(x + i)));
    for (int k = 0; k < 8; k++) acc += p[k];
  }
  for (; i < n; i++) acc += bf16_to_f32(h[i]) * x[i];
  return acc;
}

float dot_f32_avx2_exact(const void* w, const void* act, int64_t n) {
  const float* a = static_cast<const float*>(w);
  const float* x = static_cast<const float*>(act);
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
