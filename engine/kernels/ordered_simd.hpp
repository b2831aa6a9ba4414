#pragma once
// Order-preserving SIMD: vector kernels whose results are bit-identical to ds4's sequential
// scalar loops. A sequential f32 sum cannot be split across SIMD lanes without changing its
// rounding, but many independent sums can run side by side, one per lane, each in the
// reference order. Fast mode uses these kernels, so it returns exactly the Exact-mode logits:
//  * F16 matvec: lanes are 8 output rows (8x8 tiles transposed on the fly), each lane summing
//    f16(w[r][i]) * x[i] for i ascending, multiply then add (no FMA);
//  * attention / indexer scores: lanes are heads (q transposed to [dim][heads]), each lane
//    summing q[h][i] * k[i] for i ascending;
//  * axpy: y[i] += a * x[i] is elementwise, so any vector width is exact.
// available() is false without AVX2+F16C; the functions then run their scalar references (the
// F16 trait's dot_scalar per row, plain sequential loops), so the results never depend on the CPU.
// These keep the reference order, which is what Fast runs today; the Fast order that replaces it
// (slices and fixed trees a GPU can follow) is docs/arithmetic.md §float-dot, §attention.
// The model (engine/model linear, attention, indexer) is the user; tests/quant checks the bits.
#include <cstdint>

namespace ds4::kernels::ordered {

bool available();

// out[r - r0] = sum_i f16(W[r][i]) * x[i] (sequential in i) for r in [r0, r1).
void f16_matvec_rows(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);

// out[l] = sum_i qT[i * lanes + l] * k[i] (sequential in i) for l < lanes; lanes % 8 == 0.
void dot_lanes(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);

// y[i] += a * x[i].
void axpy(float* y, const float* x, float a, uint32_t n);

}  // namespace ds4::kernels::ordered
