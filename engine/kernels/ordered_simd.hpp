#pragma once
// Order-preserving SIMD: vector kernels whose results are bit-identical to ds4's sequential
// scalar loops (many independent sums side by side, one per lane, never one sum split across
// lanes). available() is false without AVX2+F16C; the functions then run their scalar
// references, so the results never depend on the CPU. Which lanes each kernel uses:
// docs/engine.md §order-preserving-simd.
#include <cstddef>
#include <cstdint>

namespace ds4::kernels::ordered {

bool available();

// out[r - r0] = sum_i f16(W[r][i]) * x[i] (sequential in i) for r in [r0, r1).
void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);

// f16_matvec_rows for n_x activation rows (x + t * x_stride, t < n_x) at once: each weight
// tile is converted to f32 once for up to kMultiRows of them, then every row takes the single-row
// kernel's multiplies and adds in its order, so out[t * out_stride + (r - r0)] has the bits
// f16_matvec_rows(W, cols, r0, r1, x + t * x_stride, ...) gives.
// See docs/engine.md §order-preserving-simd.
inline constexpr int kMultiRows = 8;
void f16_matvec_rows_multi(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, size_t x_stride,
                           int n_x, float* out, size_t out_stride);

// out[l] = sum_i qT[i * lanes + l] * k[i] (sequential in i) for l < lanes; lanes % 8 == 0.
void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);

// y[i] += a * x[i].
void axpy(float* y, const float* x, float a, uint32_t n);

}  // namespace ds4::kernels::ordered
