#pragma once
// What the int8 tensor-core GEMM kernels (gemm_blocks32.cuh, gemm_q2_k.cuh, gemm_q4_k.cuh,
// gemm_iq2_xxs.cuh) share about an output tile of 16·kMi tokens by 8·kNi weight rows: the rows
// lane (g, q) reads (clamped to the last one past the end), its A words of 32 int8 activations,
// the per-output arrays' start, and the store after the slices' tree (docs/cuda.md §gemm).
// Forced inline with the arrays by reference, so they stay in registers: the kernels' SASS is the
// same as with the loops written out in each (docs/cuda.md §gemm-tile).
#include <cstdint>

#include "engine/cuda/kernels/gemm_rows.cuh"

namespace ds4::cuda::kernels {

// Weight row r of w (row_bytes each, `rows` of them); a row past the end reads as the last one.
__device__ __forceinline__ const uint8_t* gemm_weight_row(const uint8_t* w, int64_t r, int64_t rows,
                                                          int64_t row_bytes) {
  return w + (r < rows ? r : rows - 1) * row_bytes;
}

// Lane (g, ·)'s fragment rows: tokens t0 + 16 mi + 8 h + g of x (A, m16 tiles) and weight rows
// r0 + 8 ni + g (B, n8 tiles).
template <int kMi, int kNi>
__device__ __forceinline__ void gemm_fragment_rows(const GemmRows& x, int64_t t0, const uint8_t* w, int64_t rows,
                                                   int64_t row_bytes, int64_t r0, int g, const uint8_t* (&arow)[kMi][2],
                                                   const uint8_t* (&brow)[kNi]) {
#pragma unroll
  for (int mi = 0; mi < kMi; mi++)
#pragma unroll
    for (int h = 0; h < 2; h++) arow[mi][h] = x.act_row(t0 + 16 * mi + 8 * h + g);
#pragma unroll
  for (int ni = 0; ni < kNi; ni++) brow[ni] = gemm_weight_row(w, r0 + 8 * ni + g, rows, row_bytes);
}

// Lane quarter q's A words of every m16 tile: bytes off + 4q .. off + 4q + 3 and off + 16 + 4q ..
// of its two token rows (g and g + 8), the 32 int8 of one k = 32 step (4-byte aligned).
template <int kMi>
__device__ __forceinline__ void gemm_a_words(const uint8_t* const (&arow)[kMi][2], int64_t off, int q,
                                             uint32_t (&a)[kMi][4]) {
#pragma unroll
  for (int mi = 0; mi < kMi; mi++) {
    const uint32_t* x0 = reinterpret_cast<const uint32_t*>(arow[mi][0] + off);
    const uint32_t* x8 = reinterpret_cast<const uint32_t*>(arow[mi][1] + off);
    a[mi][0] = x0[q];
    a[mi][1] = x8[q];
    a[mi][2] = x0[4 + q];
    a[mi][3] = x8[4 + q];
  }
}

// Every output's entry of a per-output array set to v.
template <int kMi, int kNi, class T>
__device__ __forceinline__ void gemm_fill(T (&out)[kMi][kNi][4], T v) {
#pragma unroll
  for (int mi = 0; mi < kMi; mi++)
#pragma unroll
    for (int ni = 0; ni < kNi; ni++)
#pragma unroll
      for (int c = 0; c < 4; c++) out[mi][ni][c] = v;
}

// Lane (g, q)'s outputs after the tree: finish(acc) to token t0 + 16 mi + 8 (c / 2) + g, weight
// row r0 + 8 ni + 2q + c % 2, where both exist.
template <int kMi, int kNi, class Finish>
__device__ __forceinline__ void gemm_store(const float (&acc)[kMi][kNi][4], const GemmRows& x, int64_t t0, int64_t r0,
                                           int64_t rows, int g, int q, Finish finish) {
#pragma unroll
  for (int mi = 0; mi < kMi; mi++)
#pragma unroll
    for (int ni = 0; ni < kNi; ni++)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const int64_t t = t0 + 16 * mi + 8 * (c / 2) + g, r = r0 + 8 * ni + 2 * q + c % 2;
        if (t < x.n && r < rows) x.out_row_of(t)[r] = finish(acc[mi][ni][c]);
      }
}

}  // namespace ds4::cuda::kernels
