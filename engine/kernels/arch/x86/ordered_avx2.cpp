// AVX2 + F16C implementations of the order-preserving kernels (ordered_simd.hpp). Compiled
// with -mavx2 -mf16c only (no -mfma: every multiply-add here must stay two roundings), and
// called only when quant::best_isa() chose the Avx2 kernels (arch/x86/ops_x86.cpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ds4::kernels::detail::avx2 {

namespace {

// Exact f16 -> f32 (F16C); kept local so no inline function of another header is compiled
// with AVX2 enabled in this translation unit.
inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

inline void transpose8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6, __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r0 = _mm256_permute2f128_ps(u0, u4, 0x20);
  r1 = _mm256_permute2f128_ps(u1, u5, 0x20);
  r2 = _mm256_permute2f128_ps(u2, u6, 0x20);
  r3 = _mm256_permute2f128_ps(u3, u7, 0x20);
  r4 = _mm256_permute2f128_ps(u0, u4, 0x31);
  r5 = _mm256_permute2f128_ps(u1, u5, 0x31);
  r6 = _mm256_permute2f128_ps(u2, u6, 0x31);
  r7 = _mm256_permute2f128_ps(u3, u7, 0x31);
}

inline __m256 load_h8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 rows starting at `W`, stride `cols`: acc lanes = rows.
inline __m256 rows8(const uint16_t* W, int64_t cols, const float* x) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= cols; i += 8) {
    __m256 c0 = load_h8(W + 0 * cols + i), c1 = load_h8(W + 1 * cols + i), c2 = load_h8(W + 2 * cols + i),
           c3 = load_h8(W + 3 * cols + i), c4 = load_h8(W + 4 * cols + i), c5 = load_h8(W + 5 * cols + i),
           c6 = load_h8(W + 6 * cols + i), c7 = load_h8(W + 7 * cols + i);
    transpose8(c0, c1, c2, c3, c4, c5, c6, c7);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c0, _mm256_set1_ps(x[i + 0])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c1, _mm256_set1_ps(x[i + 1])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c2, _mm256_set1_ps(x[i + 2])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c3, _mm256_set1_ps(x[i + 3])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c4, _mm256_set1_ps(x[i + 4])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c5, _mm256_set1_ps(x[i + 5])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c6, _mm256_set1_ps(x[i + 6])));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(c7, _mm256_set1_ps(x[i + 7])));
  }
  if (i < cols) {  // finish each lane's sum in scalar, same order
    alignas(32) float lane[8];
    _mm256_store_ps(lane, acc);
    for (int r = 0; r < 8; r++)
      for (int64_t j = i; j < cols; j++) lane[r] += h2f(W[r * cols + j]) * x[j];
    acc = _mm256_load_ps(lane);
  }
  return acc;
}

// rows8 for N activation rows (xs[t]; results to outs[t][0..7]): each 8x8 tile of weights is
// converted and transposed once into `tile`, then every row's accumulator takes the tile's
// columns in rows8's order, acc + c * x. N is a template argument so the N accumulators live in
// registers and their add chains overlap.
template <int N>
void rows8_multi(const uint16_t* W, int64_t cols, const float* const* xs, float* const* outs) {
  __m256 acc[N];
  for (int t = 0; t < N; t++) acc[t] = _mm256_setzero_ps();
  alignas(32) float tile[8][8];
  int64_t i = 0;
  for (; i + 8 <= cols; i += 8) {
    __m256 c0 = load_h8(W + 0 * cols + i), c1 = load_h8(W + 1 * cols + i), c2 = load_h8(W + 2 * cols + i),
           c3 = load_h8(W + 3 * cols + i), c4 = load_h8(W + 4 * cols + i), c5 = load_h8(W + 5 * cols + i),
           c6 = load_h8(W + 6 * cols + i), c7 = load_h8(W + 7 * cols + i);
    transpose8(c0, c1, c2, c3, c4, c5, c6, c7);
    _mm256_store_ps(tile[0], c0), _mm256_store_ps(tile[1], c1), _mm256_store_ps(tile[2], c2);
    _mm256_store_ps(tile[3], c3), _mm256_store_ps(tile[4], c4), _mm256_store_ps(tile[5], c5);
    _mm256_store_ps(tile[6], c6), _mm256_store_ps(tile[7], c7);
    for (int k = 0; k < 8; k++) {
      const __m256 c = _mm256_load_ps(tile[k]);
      for (int t = 0; t < N; t++) acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(c, _mm256_set1_ps(xs[t][i + k])));
    }
  }
  alignas(32) float lane[N][8];
  for (int t = 0; t < N; t++) _mm256_store_ps(lane[t], acc[t]);
  for (int r = 0; r < 8; r++)  // rows8's scalar finish of each lane, same order
    for (int64_t j = i; j < cols; j++) {
      const float w = h2f(W[r * cols + j]);
      for (int t = 0; t < N; t++) lane[t][r] += w * xs[t][j];
    }
  for (int t = 0; t < N; t++) std::memcpy(outs[t], lane[t], sizeof lane[t]);
}

using Rows8MultiFn = void (*)(const uint16_t*, int64_t, const float* const*, float* const*);
constexpr Rows8MultiFn kRows8Multi[] = {rows8_multi<1>, rows8_multi<2>, rows8_multi<3>, rows8_multi<4>,
                                        rows8_multi<5>, rows8_multi<6>, rows8_multi<7>, rows8_multi<8>};

}  // namespace

void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride) {
  const float* xs[8];
  float* outs[8];
  for (int t = 0; t < n_x; t++) xs[t] = x + size_t(t) * x_stride;
  const Rows8MultiFn rows8_n = kRows8Multi[n_x - 1];
  int64_t r = r0;
  for (; r + 8 <= r1; r += 8) {
    for (int t = 0; t < n_x; t++) outs[t] = out + size_t(t) * out_stride + size_t(r - r0);
    rows8_n(W + r * cols, cols, xs, outs);
  }
  for (; r < r1; r++) {  // f16_matvec_rows' leftover rows, one sequential sum each
    float acc[8] = {};
    const uint16_t* row = W + r * cols;
    for (int64_t i = 0; i < cols; i++) {
      const float w = h2f(row[i]);
      for (int t = 0; t < n_x; t++) acc[t] += w * xs[t][i];
    }
    for (int t = 0; t < n_x; t++) out[size_t(t) * out_stride + size_t(r - r0)] = acc[t];
  }
}

void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out) {
  int64_t r = r0;
  for (; r + 8 <= r1; r += 8) _mm256_storeu_ps(out + (r - r0), rows8(W + r * cols, cols, x));
  for (; r < r1; r++) {
    float acc = 0.0f;
    const uint16_t* row = W + r * cols;
    for (int64_t i = 0; i < cols; i++) acc += h2f(row[i]) * x[i];
    out[r - r0] = acc;
  }
}

void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out) {
  for (uint32_t l0 = 0; l0 < lanes; l0 += 64) {
    const uint32_t nv = (lanes - l0 >= 64 ? 64 : lanes - l0) / 8;
    __m256 acc[8];
    for (uint32_t v = 0; v < nv; v++) acc[v] = _mm256_setzero_ps();
    const float* q = qT + l0;
    for (uint32_t i = 0; i < d; i++) {
      const __m256 kb = _mm256_set1_ps(k[i]);
      const float* qi = q + size_t(i) * lanes;
      for (uint32_t v = 0; v < nv; v++) acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(_mm256_loadu_ps(qi + 8 * v), kb));
    }
    for (uint32_t v = 0; v < nv; v++) _mm256_storeu_ps(out + l0 + 8 * v, acc[v]);
  }
}

void axpy(float* y, const float* x, float a, uint32_t n) {
  const __m256 av = _mm256_set1_ps(a);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(av, _mm256_loadu_ps(x + i))));
  for (; i < n; i++) y[i] += a * x[i];
}

}  // namespace ds4::kernels::detail::avx2
