#pragma once
// Q4_K weights times many Q8_K activation rows (prefill) on int8 tensor cores, every output
// bit-identical to the CPU's Fast dot (docs/arithmetic.md §quantized-dot; docs/cuda.md §gemm).
// A 256-element block is 8 sub-blocks of 32: one k = 32 mma step each gives the exact integer dot
// of a sub-block, isum = Σ_j sc_j · dot_j is formed in int32 (exact, any order), summs = Σ_j m_j ·
// (bsums[2j] + bsums[2j + 1]) with four __dp4a per output, and the block update is the shared
// fast::kquant_update. Slices, warps and tree as in gemm_blocks32.cuh (split-K inside the block).
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
constexpr int kGemmQ4KTokens = 32, kGemmQ4KRows = 32;

// Weight rows are BlockQ4_K (144 bytes: f16 d, dmin; 12 packed 6-bit scales and mins; 128 bytes
// of nibbles, sub-block j in the low (j even) or high (j odd) nibbles of bytes 32 (j / 2) + l),
// activation rows BlockQ8_K (292 bytes: f32 d; i8 q[256]; i16 bsums[16]) in x (gemm_rows.cuh).
// The thread block covers tokens t0 + [0, 32) of x and weight rows r0 + [0, 32) (the plain kernel:
// block i, token tile i % token_tiles, row tile i / token_tiles). A = activations (2 m16 tiles), B = weights (4 n8
// tiles), as in gemm_blocks32.cuh; the nibbles are 32-bit words of 4 weights masked to bytes (0..15, valid s8). Per
// block, lane l decodes the scales of weight row l and the sums of token l into shared memory: sc_j as int32, the mins
// m_j as bytes, and bs_j = bsums[2j] + bsums[2j + 1] (|bs_j| <= 4096) as bytes of lo = bs_j & 127 and hi = bs_j >> 7,
// so that summs = Σ m·lo + 128 Σ m·hi by __dp4a.
__device__ void gemm_q4_k(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, GemmRows x, int64_t t0,
                          int64_t r0) {
  namespace qd = ds4::quant::detail;
  constexpr int kMi = kGemmQ4KTokens / 16, kNi = kGemmQ4KRows / 8, kAcc = kMi * kNi * 4, kSub = 8;
  constexpr int64_t kWBytes = sizeof(qd::BlockQ4_K), kABytes = sizeof(qd::BlockQ8_K);
  constexpr int kWarps = quant::fast::kSlices;
  __shared__ float partial[1][2][kAcc][32];
  __shared__ int32_t sc[kWarps][kSub][kGemmQ4KRows];
  __shared__ uint32_t mins[kWarps][kGemmQ4KRows][2];
  __shared__ uint32_t bsum_bytes[kWarps][kGemmQ4KTokens][4];  // lo 0..3, lo 4..7, hi 0..3, hi 4..7
  __shared__ float wd[kWarps][kGemmQ4KRows], wdmin[kWarps][kGemmQ4KRows], xd[kWarps][kGemmQ4KTokens];
  const int s = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, q = lane % 4;
  const int64_t nb = cols / 256, wrow_bytes = nb * kWBytes;
  const uint8_t* arow[kMi][2];
  const uint8_t* brow[kNi];
  gemm_fragment_rows(x, t0, w, rows, wrow_bytes, r0, g, arow, brow);
  const uint8_t* own_w = gemm_weight_row(w, r0 + lane, rows, wrow_bytes);
  const uint8_t* own_x = x.act_row(t0 + lane);
  const int32_t zero[4] = {0, 0, 0, 0};

  float acc[kMi][kNi][4];
  gemm_fill(acc, 0.0f);

  for (int64_t b = s; b < nb; b += quant::fast::kSlices) {  // slice s, ascending (uniform in the warp)
    {
      const auto* wb = reinterpret_cast<const qd::BlockQ4_K*>(own_w + b * kWBytes);
      wd[s][lane] = quant::arith::f16_to_f32(wb->d);
      wdmin[s][lane] = quant::arith::f16_to_f32(wb->dmin);
      uint32_t m4[2] = {0, 0};
#pragma unroll
      for (int j = 0; j < kSub; j++) {
        int scj, mj;
        qd::q4_k_scale_min(wb->scales, j, scj, mj);
        sc[s][j][lane] = scj;
        m4[j / 4] |= static_cast<uint32_t>(mj) << (8 * (j % 4));
      }
      mins[s][lane][0] = m4[0];
      mins[s][lane][1] = m4[1];
      const auto* xb = reinterpret_cast<const qd::BlockQ8_K*>(own_x + b * kABytes);
      xd[s][lane] = xb->d;
      uint32_t bytes[4] = {0, 0, 0, 0};
#pragma unroll
      for (int j = 0; j < kSub; j++) {
        const int32_t bs = xb->bsums[2 * j] + xb->bsums[2 * j + 1];
        bytes[j / 4] |= static_cast<uint32_t>(bs & 127) << (8 * (j % 4));
        bytes[2 + j / 4] |= (static_cast<uint32_t>(bs >> 7) & 255u) << (8 * (j % 4));
      }
#pragma unroll
      for (int i = 0; i < 4; i++) bsum_bytes[s][lane][i] = bytes[i];
    }
    __syncwarp();
    int32_t isum[kMi][kNi][4];
    gemm_fill(isum, 0);
#pragma unroll
    for (int pair = 0; pair < kSub / 2; pair++) {  // sub-blocks 2 pair (low nibbles), 2 pair + 1 (high)
      uint32_t wq[kNi][2];
#pragma unroll
      for (int ni = 0; ni < kNi; ni++) {
        const uint32_t* qs = reinterpret_cast<const uint32_t*>(brow[ni] + b * kWBytes + 16 + 32 * pair);
        wq[ni][0] = qs[q];
        wq[ni][1] = qs[4 + q];
      }
#pragma unroll
      for (int hiq = 0; hiq < 2; hiq++) {
        const int j = 2 * pair + hiq;
        uint32_t a[kMi][4];
        gemm_a_words(arow, b * kABytes + 4 + 32 * j, q, a);
#pragma unroll
        for (int ni = 0; ni < kNi; ni++) {
          const uint32_t bw[2] = {(wq[ni][0] >> (4 * hiq)) & 0x0f0f0f0fu, (wq[ni][1] >> (4 * hiq)) & 0x0f0f0f0fu};
          const int32_t scale[2] = {sc[s][j][8 * ni + 2 * q], sc[s][j][8 * ni + 2 * q + 1]};
#pragma unroll
          for (int mi = 0; mi < kMi; mi++) {
            int32_t d[4];
            mma_s8_16x8x32(d, a[mi], bw, zero);
#pragma unroll
            for (int c = 0; c < 4; c++) isum[mi][ni][c] += scale[c % 2] * d[c];
          }
        }
      }
    }
    // The block update of fast::kquant_update (Q4KBlock::update), per output.
#pragma unroll
    for (int ni = 0; ni < kNi; ni++)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const int rr = 8 * ni + 2 * q + c % 2;
        const int32_t m0 = static_cast<int32_t>(mins[s][rr][0]), m1 = static_cast<int32_t>(mins[s][rr][1]);
#pragma unroll
        for (int mi = 0; mi < kMi; mi++) {
          const int tt = 16 * mi + 8 * (c / 2) + g;
          const uint32_t* by = bsum_bytes[s][tt];
          const int32_t lo = __dp4a(m0, static_cast<int32_t>(by[0]), __dp4a(m1, static_cast<int32_t>(by[1]), 0));
          const int32_t hi = __dp4a(m0, static_cast<int32_t>(by[2]), __dp4a(m1, static_cast<int32_t>(by[3]), 0));
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

// Two thread blocks per SM (at most 128 registers a thread).
extern "C" __global__ void __launch_bounds__(256, 2)
    ds4_gemm_q4_k(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, int64_t n,
                  float* out) {
  namespace k = ds4::cuda::kernels;
  const int64_t token_tiles = (n + k::kGemmQ4KTokens - 1) / k::kGemmQ4KTokens;
  const k::GemmRows x{act, act_row_bytes, out, rows, nullptr, 1, n};
  k::gemm_q4_k(w, rows, cols, x, static_cast<int64_t>(blockIdx.x % token_tiles) * k::kGemmQ4KTokens,
               static_cast<int64_t>(blockIdx.x / token_tiles) * k::kGemmQ4KRows);
}
