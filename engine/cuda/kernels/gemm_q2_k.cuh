#pragma once
// Q2_K weights times many Q8_K activation rows (prefill) on int8 tensor cores, every output
// bit-identical to the CPU's Fast dot (docs/arithmetic.md §quantized-dot; docs/cuda.md §gemm).
// A sub-block's 4-bit scale times its 2-bit levels is at most 45, so the B bytes are sc · level:
// one m16n8k32 step covers two 16-element sub-blocks with their scales, and the 8 steps of a
// 256-element block chain in the mma accumulator to isum = Σ sc · <levels, q8> (exact int32).
// summs = Σ min · bsum by eight __dp4a per output; the block update is fast::kquant_update.
// Slices, warps and tree as in gemm_blocks32.cuh (split-K inside the block).
#include <cstdint>

#include "engine/cuda/kernels/gemm_rows.cuh"
#include "engine/cuda/kernels/gemm_tile.cuh"
#include "engine/cuda/kernels/gemm_tree.cuh"
#include "engine/cuda/kernels/mma.cuh"
#include "engine/quant/block_arith.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::kernels {

// Output tile: 32 tokens x 32 weight rows, 8 warps (warp s = slice s), 256 threads.
constexpr int kGemmQ2KTokens = 32, kGemmQ2KRows = 32;

// Weight rows are BlockQ2_K (84 bytes: 16 scale bytes, scale in the low nibble and min in the
// high; 64 bytes of 2-bit levels; f16 d, dmin), activation rows BlockQ8_K (292 bytes) act_row_bytes
// apart (a multiple of 4). Step p (elements 32p..32p+31) holds sub-blocks 2p and 2p+1; lane (g, q)
// of B tile ni takes weight row 8ni + g, elements 4q..4q+3 of each: bits 2 (p % 4) of the 32-bit
// words 8 (p / 4) + q and 8 (p / 4) + 4 + q of qs, masked to bytes and multiplied by the
// sub-block's scale (a word times a scalar: each byte product <= 45, no carry). Per block, lane l
// writes the mins of weight row l and the bsums of token l (|bsum| <= 2048, split into bytes
// lo = bsum & 127, hi = bsum >> 7) to shared memory: summs = Σ min·lo + 128 Σ min·hi.
__device__ void gemm_q2_k(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, GemmRows x, int64_t t0,
                          int64_t r0) {
  namespace qd = ds4::quant::detail;
  constexpr int kMi = kGemmQ2KTokens / 16, kNi = kGemmQ2KRows / 8, kAcc = kMi * kNi * 4;
  constexpr int64_t kWBytes = sizeof(qd::BlockQ2_K), kABytes = sizeof(qd::BlockQ8_K);
  constexpr int kWarps = quant::fast::kSlices;
  __shared__ float partial[1][2][kAcc][32];
  __shared__ uint32_t mins[kWarps][kGemmQ2KRows][4];          // min bytes of sub-blocks 0..15
  __shared__ uint32_t bsum_bytes[kWarps][kGemmQ2KTokens][8];  // lo 0..15 (4 words), hi 0..15
  __shared__ float wd[kWarps][kGemmQ2KRows], wdmin[kWarps][kGemmQ2KRows], xd[kWarps][kGemmQ2KTokens];
  const int s = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, q = lane % 4;
  const int64_t nb = cols / 256, wrow_bytes = nb * kWBytes;
  const uint8_t* arow[kMi][2];
  const uint8_t* brow[kNi];
  gemm_fragment_rows(x, t0, w, rows, wrow_bytes, r0, g, arow, brow);
  const uint8_t* own_w = gemm_weight_row(w, r0 + lane, rows, wrow_bytes);
  const uint8_t* own_x = x.act_row(t0 + lane);

  float acc[kMi][kNi][4];
  gemm_fill(acc, 0.0f);

  for (int64_t b = s; b < nb; b += quant::fast::kSlices) {  // slice s, ascending (uniform in the warp)
    {
      const auto* wb = reinterpret_cast<const qd::BlockQ2_K*>(own_w + b * kWBytes);
      wd[s][lane] = quant::arith::f16_to_f32(wb->d);
      wdmin[s][lane] = quant::arith::f16_to_f32(wb->dmin);
      const uint32_t* sw = reinterpret_cast<const uint32_t*>(wb->scales);
#pragma unroll
      for (int i = 0; i < 4; i++) mins[s][lane][i] = (sw[i] >> 4) & 0x0f0f0f0fu;
      const auto* xb = reinterpret_cast<const qd::BlockQ8_K*>(own_x + b * kABytes);
      xd[s][lane] = xb->d;
      uint32_t bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int is = 0; is < 16; is++) {
        const int32_t bs = xb->bsums[is];
        bytes[is / 4] |= static_cast<uint32_t>(bs & 127) << (8 * (is % 4));
        bytes[4 + is / 4] |= (static_cast<uint32_t>(bs >> 7) & 255u) << (8 * (is % 4));
      }
#pragma unroll
      for (int i = 0; i < 8; i++) bsum_bytes[s][lane][i] = bytes[i];
    }
    __syncwarp();
    int32_t isum[kMi][kNi][4];
    gemm_fill(isum, 0);
#pragma unroll
    for (int half = 0; half < 2; half++) {  // steps 4 half .. 4 half + 3 share the level words
      uint32_t wq[kNi][2], sc[kNi][2];
#pragma unroll
      for (int ni = 0; ni < kNi; ni++) {
        const auto* wb = reinterpret_cast<const qd::BlockQ2_K*>(brow[ni] + b * kWBytes);
        const uint32_t* qs = reinterpret_cast<const uint32_t*>(wb->qs);
        wq[ni][0] = qs[8 * half + q];
        wq[ni][1] = qs[8 * half + 4 + q];
        const uint32_t* sw = reinterpret_cast<const uint32_t*>(wb->scales);
        sc[ni][0] = sw[2 * half] & 0x0f0f0f0fu;  // scales of sub-blocks 8 half + 0..3
        sc[ni][1] = sw[2 * half + 1] & 0x0f0f0f0fu;
      }
#pragma unroll
      for (int step = 0; step < 4; step++) {
        const int p = 4 * half + step;
        uint32_t a[kMi][4];
        gemm_a_words(arow, b * kABytes + 4 + 32 * p, q, a);
#pragma unroll
        for (int ni = 0; ni < kNi; ni++) {
          // Sub-blocks 2p and 2p + 1 are scale bytes 2 step and 2 step + 1 of word sc[ni][step / 2].
          const uint32_t sw = sc[ni][step / 2] >> (16 * (step % 2));
          const uint32_t bw[2] = {((wq[ni][0] >> (2 * step)) & 0x03030303u) * (sw & 0xffu),
                                  ((wq[ni][1] >> (2 * step)) & 0x03030303u) * ((sw >> 8) & 0xffu)};
#pragma unroll
          for (int mi = 0; mi < kMi; mi++) mma_s8_16x8x32(isum[mi][ni], a[mi], bw, isum[mi][ni]);
        }
      }
    }
    // The block update of fast::kquant_update (Q2KBlock::update), per output.
#pragma unroll
    for (int ni = 0; ni < kNi; ni++)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const int rr = 8 * ni + 2 * q + c % 2;
#pragma unroll
        for (int mi = 0; mi < kMi; mi++) {
          const int tt = 16 * mi + 8 * (c / 2) + g;
          const uint32_t* m = mins[s][rr];
          const uint32_t* by = bsum_bytes[s][tt];
          int32_t lo = 0, hi = 0;
#pragma unroll
          for (int i = 0; i < 4; i++) {
            lo = __dp4a(static_cast<int32_t>(m[i]), static_cast<int32_t>(by[i]), lo);
            hi = __dp4a(static_cast<int32_t>(m[i]), static_cast<int32_t>(by[4 + i]), hi);
          }
          acc[mi][ni][c] = quant::fast::kquant_update(acc[mi][ni][c], xd[s][tt], wd[s][rr], wdmin[s][rr],
                                                      isum[mi][ni][c], lo + 128 * hi);
        }
      }
    __syncwarp();  // the scales are rewritten by the next block
  }

  gemm_slice_tree<kAcc, 1>(&acc[0][0][0], partial, s, 0, lane);
  if (s != 0) return;
  gemm_store(acc, x, t0, r0, rows, g, q, [](float v) { return v; });
}

}  // namespace ds4::cuda::kernels

extern "C" __global__ void __launch_bounds__(256, 2)
    ds4_gemm_q2_k(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, int64_t n,
                  float* out) {
  namespace k = ds4::cuda::kernels;
  const int64_t token_tiles = (n + k::kGemmQ2KTokens - 1) / k::kGemmQ2KTokens;
  const k::GemmRows x{act, act_row_bytes, out, rows, nullptr, 1, n};
  k::gemm_q2_k(w, rows, cols, x, static_cast<int64_t>(blockIdx.x % token_tiles) * k::kGemmQ2KTokens,
               static_cast<int64_t>(blockIdx.x / token_tiles) * k::kGemmQ2KRows);
}
