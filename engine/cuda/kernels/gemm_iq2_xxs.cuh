#pragma once
// IQ2_XXS weights times many Q8_K activation rows (prefill) on int8 tensor cores, every output
// bit-identical to the CPU's Fast dot (docs/arithmetic.md §quantized-dot; docs/cuda.md §gemm).
// Each 32-element group of a block is one m16n8k32 step: the B bytes are the signed grid values
// (|v| <= 43), built from the shared grid and sign look-ups (table_lookup.hpp); bsum = Σ_ib
// (2 s_ib + 1) · dot_ib is formed in int32 per output (exact), then fast::iq2_xxs_update, and
// fast::iq2_xxs_finish after the tree. Slices, warps and tree as in gemm_blocks32.cuh.
#include <cstdint>

#include "engine/cuda/kernels/gemm_rows.cuh"
#include "engine/cuda/kernels/gemm_tile.cuh"
#include "engine/cuda/kernels/gemm_tree.cuh"
#include "engine/cuda/kernels/mma.cuh"
#include "engine/quant/block_arith.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"
#include "engine/quant/table_lookup.hpp"

namespace ds4::cuda::kernels {

// Output tile: 32 tokens x 32 weight rows, 8 warps (warp s = slice s), 256 threads.
constexpr int kGemmIq2Tokens = 32, kGemmIq2Rows = 32;

// The B word of 4 elements: the grid bytes `v` (0..43) negated where `signs` (4 bits) says so.
// Byte masks from the bits by one multiply (bit i to bit 8i), negation without borrows.
__device__ __forceinline__ uint32_t iq2_signed_word(uint32_t v, uint32_t signs) {
  const uint32_t mask = ((signs * 0x00204081u) & 0x01010101u) * 0xffu;
  const uint32_t neg = (0x80808080u - v) ^ 0x80808080u;
  return (v & ~mask) | (neg & mask);
}

// Weight rows are BlockIQ2_XXS (66 bytes, 2-byte aligned: f16 d; 32 u16 = per group ib the words
// aux0 (4 grid indices) and aux1 (4 x 7 sign bits, 4-bit scale s on top)), activation rows
// BlockQ8_K act_row_bytes apart (a multiple of 4). Lane (g, q) of B tile ni takes weight row
// 8ni + g, elements 4q..4q+3 (grid entry q / 2, half q % 2) and 16+4q..16+4q+3 (entry 2 + q / 2)
// of group ib. Per block, lane l decodes d and the eight 2 s + 1 of weight row l into shared memory.
__device__ void gemm_iq2_xxs(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, GemmRows x, int64_t t0,
                             int64_t r0) {
  namespace qd = ds4::quant::detail;
  constexpr int kMi = kGemmIq2Tokens / 16, kNi = kGemmIq2Rows / 8, kAcc = kMi * kNi * 4, kGroups = 8;
  constexpr int64_t kWBytes = sizeof(qd::BlockIQ2_XXS), kABytes = sizeof(qd::BlockQ8_K);
  constexpr int kWarps = quant::fast::kSlices;
  __shared__ float partial[1][2][kAcc][32];
  __shared__ int32_t scale[kWarps][kGroups][kGemmIq2Rows];
  __shared__ float wd[kWarps][kGemmIq2Rows], xd[kWarps][kGemmIq2Tokens];
  const int s = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, q = lane % 4;
  const int64_t nb = cols / 256, wrow_bytes = nb * kWBytes;
  const uint8_t* arow[kMi][2];
  const uint8_t* brow[kNi];
  gemm_fragment_rows(x, t0, w, rows, wrow_bytes, r0, g, arow, brow);
  const uint8_t* own_w = gemm_weight_row(w, r0 + lane, rows, wrow_bytes);
  const uint8_t* own_x = x.act_row(t0 + lane);
  const int32_t zero[4] = {0, 0, 0, 0};
  const int half = q % 2, entry = q / 2;

  float acc[kMi][kNi][4];
  gemm_fill(acc, 0.0f);

  for (int64_t b = s; b < nb; b += quant::fast::kSlices) {  // slice s, ascending (uniform in the warp)
    {
      const auto* wb = reinterpret_cast<const qd::BlockIQ2_XXS*>(own_w + b * kWBytes);
      wd[s][lane] = quant::arith::f16_to_f32(wb->d);
#pragma unroll
      for (int ib = 0; ib < kGroups; ib++)
        scale[s][ib][lane] = static_cast<int32_t>(2 * (wb->qs[4 * ib + 3] >> 12) + 1);
      xd[s][lane] = reinterpret_cast<const qd::BlockQ8_K*>(own_x + b * kABytes)->d;
    }
    __syncwarp();
    int32_t bsum[kMi][kNi][4];
    gemm_fill(bsum, 0);
#pragma unroll 2
    for (int ib = 0; ib < kGroups; ib++) {
      uint32_t a[kMi][4];
      gemm_a_words(arow, b * kABytes + 4 + 32 * ib, q, a);
#pragma unroll
      for (int ni = 0; ni < kNi; ni++) {
        const uint16_t* qs = reinterpret_cast<const qd::BlockIQ2_XXS*>(brow[ni] + b * kWBytes)->qs + 4 * ib;
        const uint32_t aux0 = qs[0] | static_cast<uint32_t>(qs[1]) << 16;
        const uint32_t aux1 = qs[2] | static_cast<uint32_t>(qs[3]) << 16;
        uint32_t bw[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
          const int l = 2 * i + entry;  // grid entry of elements 16 i + 4q .. 16 i + 4q + 3
          const uint64_t grid = qd::iq2xxs_grid((aux0 >> (8 * l)) & 255u);
          const uint32_t signs = qd::iq2_sign_mask((aux1 >> (7 * l)) & 127u) >> (4 * half);
          bw[i] = iq2_signed_word(static_cast<uint32_t>(grid >> (32 * half)), signs & 15u);
        }
        const int32_t sc[2] = {scale[s][ib][8 * ni + 2 * q], scale[s][ib][8 * ni + 2 * q + 1]};
#pragma unroll
        for (int mi = 0; mi < kMi; mi++) {
          int32_t d[4];
          mma_s8_16x8x32(d, a[mi], bw, zero);
#pragma unroll
          for (int c = 0; c < 4; c++) bsum[mi][ni][c] += sc[c % 2] * d[c];
        }
      }
    }
#pragma unroll
    for (int ni = 0; ni < kNi; ni++)
#pragma unroll
      for (int c = 0; c < 4; c++)
#pragma unroll
        for (int mi = 0; mi < kMi; mi++) {
          const int rr = 8 * ni + 2 * q + c % 2, tt = 16 * mi + 8 * (c / 2) + g;
          acc[mi][ni][c] = quant::fast::iq2_xxs_update(acc[mi][ni][c], wd[s][rr], xd[s][tt], bsum[mi][ni][c]);
        }
    __syncwarp();  // the scales are rewritten by the next block
  }

  gemm_slice_tree<kAcc, 1>(&acc[0][0][0], partial, s, 0, lane);
  if (s != 0) return;
  gemm_store(acc, x, t0, r0, rows, g, q, [](float v) { return quant::fast::iq2_xxs_finish(v); });
}

}  // namespace ds4::cuda::kernels

extern "C" __global__ void __launch_bounds__(256)
    ds4_gemm_iq2_xxs(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, int64_t n,
                     float* out) {
  namespace k = ds4::cuda::kernels;
  const int64_t token_tiles = (n + k::kGemmIq2Tokens - 1) / k::kGemmIq2Tokens;
  const k::GemmRows x{act, act_row_bytes, out, rows, nullptr, 1, n};
  k::gemm_iq2_xxs(w, rows, cols, x, static_cast<int64_t>(blockIdx.x % token_tiles) * k::kGemmIq2Tokens,
                  static_cast<int64_t>(blockIdx.x / token_tiles) * k::kGemmIq2Rows);
}
