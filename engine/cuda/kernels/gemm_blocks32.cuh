#pragma once
// Q8_0 or MXFP4 weights times many Q8_0 activation rows (prefill) on int8 tensor cores, every
// output bit-identical to the CPU's Fast dot of its weight row and activation row
// (docs/arithmetic.md §slices, §matrix-matrix; docs/cuda.md §gemm): the mma gives each 32-element
// block's exact integer dot, then each output takes the block update (fast::blocks32_update) in
// its slice exactly as the matvec does, and the slices meet in the tree.
// Split-K by the contract's 8 slices inside one thread block: warp s owns slice s (blocks s, s+8,
// ... in ascending order) for the whole output tile; the tree is three shared-memory steps.
#include <cstdint>

#include "engine/cuda/kernels/gemm_rows.cuh"
#include "engine/cuda/kernels/gemm_tile.cuh"
#include "engine/cuda/kernels/gemm_tree.cuh"
#include "engine/cuda/kernels/mma.cuh"
#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::kernels {
namespace arith = ds4::quant::arith;
namespace fast = ds4::quant::fast;

// Output tile of a thread block: 32·W activation rows (tokens) x 64 weight rows; 8·W warps, W per
// slice (W = 1: 256 threads, for n <= 32; W = 2: 512 threads, the two warps of a slice on token
// halves of the tile read the same weight bytes, the second mostly from L1).
constexpr int kGemmRows = 64, kGemmWarpTokens = 32;

// The weight formats of 32-element blocks against Q8_0 activation blocks: block bytes, the exact
// f32 scale, and lane quarter q's two B words (elements 4q..4q+3 and 16+4q..16+4q+3 as s8).
struct GemmQ8_0Weight {  // {f16 d; i8 q[32]}, 2-byte aligned
  static constexpr int64_t kBytes = 34;
  __device__ static float scale(const uint8_t* blk) {
    return arith::f16_to_f32(*reinterpret_cast<const uint16_t*>(blk));
  }
  __device__ static void words(const uint8_t* blk, int q, uint32_t (&b)[2]) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(blk);
    b[0] = static_cast<uint32_t>(h[1 + 2 * q]) | static_cast<uint32_t>(h[2 + 2 * q]) << 16;
    b[1] = static_cast<uint32_t>(h[9 + 2 * q]) | static_cast<uint32_t>(h[10 + 2 * q]) << 16;
  }
};
struct GemmMxfp4Weight {  // {u8 e (E8M0); u8 qs[16]}: element j in the low nibble of qs[j], j + 16 in the high
  static constexpr int64_t kBytes = 17;
  __device__ static float scale(const uint8_t* blk) { return arith::e8m0_to_f32_half(blk[0]); }
  // Four nibbles (one a byte) to the doubled E2M1 values of quant::detail::mxfp4_value: the
  // magnitude of the low 3 bits by a byte permute of {0, 1, 2, 3, 4, 6, 8, 12}, negated (borrow-free,
  // bytewise) where bit 3 is set.
  __device__ static uint32_t values(uint32_t nib) {
    const uint32_t x = nib & 0x07070707u, y = x | x >> 4;
    const uint32_t mag = __byte_perm(0x03020100u, 0x0c080604u, (y & 0xffu) | ((y >> 8) & 0xff00u));
    const uint32_t mask = ((nib >> 3) & 0x01010101u) * 0xffu;
    return (mag & ~mask) | (((0x80808080u - mag) ^ 0x80808080u) & mask);
  }
  __device__ static void words(const uint8_t* blk, int q, uint32_t (&b)[2]) {
    const uint8_t* qs = blk + 1 + 4 * q;
    const uint32_t x = static_cast<uint32_t>(qs[0]) | static_cast<uint32_t>(qs[1]) << 8 |
                       static_cast<uint32_t>(qs[2]) << 16 | static_cast<uint32_t>(qs[3]) << 24;
    b[0] = values(x & 0x0f0f0f0fu);
    b[1] = values((x >> 4) & 0x0f0f0f0fu);
  }
};

// Weight rows are Weight::kBytes blocks of 32 elements (Q8_0, MXFP4), activation rows 36-byte
// blocks {f32 d; i8 q[32]} in x (gemm_rows.cuh). The thread block covers tokens tile_t0 + [0, 32W)
// of x and weight rows r0 + [0, 64); the plain kernel gives block i token tile i % token_tiles and
// row tile i / token_tiles, so consecutive blocks share a weight tile (read from DRAM once, then
// from L2). Warp w takes slice w % 8 of
// tokens 32 (w / 8) + [0, 32) of the tile. In the mma, A is the activations (m = token, 2 tiles
// of 16) and B the weights (n = weight row, 8 tiles of 8), one k = 32 step per block: lane
// (g, q) loads A words of tokens g, g + 8 and B words of weight row g (mma.cuh), and holds outputs
// (token g or g + 8, weight row 2q or 2q + 1) of each tile. Rows and tokens past the end are read
// as the last one and never written.
template <int W, class Weight>
__device__ void gemm_blocks32(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, GemmRows x, int64_t tile_t0,
                              int64_t r0) {
  constexpr int kMi = kGemmWarpTokens / 16, kNi = kGemmRows / 8, kAcc = kMi * kNi * 4;
  constexpr int kWarps = fast::kSlices * W;
  __shared__ float partial[W][2][kAcc][32];    // the tree's partner partials, 2 per half
  __shared__ float wscale[kWarps][kGemmRows];  // per warp: this block's scales
  __shared__ float xscale[kWarps][kGemmWarpTokens];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int s = warp % fast::kSlices, half = warp / fast::kSlices;
  const int g = lane / 4, q = lane % 4;
  const int64_t t0 = tile_t0 + kGemmWarpTokens * half;
  const int64_t nb = cols / 32, wrow_bytes = nb * Weight::kBytes;
  const uint8_t* arow[kMi][2];
  const uint8_t* brow[kNi];
  gemm_fragment_rows(x, t0, w, rows, wrow_bytes, r0, g, arow, brow);
  const uint8_t* own_w[2] = {gemm_weight_row(w, r0 + lane, rows, wrow_bytes),
                             gemm_weight_row(w, r0 + 32 + lane, rows, wrow_bytes)};
  const uint8_t* own_x = x.act_row(t0 + lane);
  const int32_t bias[4] = {kMmaFloatBias, kMmaFloatBias, kMmaFloatBias, kMmaFloatBias};

  float acc[kMi][kNi][4];
  gemm_fill(acc, 0.0f);

  for (int64_t b = s; b < nb; b += fast::kSlices) {  // slice s, ascending (uniform in the warp)
    // The tile's scales, each decoded once: lane l takes weight rows l and 32 + l and token l.
    wscale[warp][lane] = Weight::scale(own_w[0] + b * Weight::kBytes);
    wscale[warp][32 + lane] = Weight::scale(own_w[1] + b * Weight::kBytes);
    xscale[warp][lane] = *reinterpret_cast<const float*>(own_x + b * 36);
    uint32_t a[kMi][4];
    gemm_a_words(arow, b * 36 + 4, q, a);
    uint32_t bw[kNi][2];
#pragma unroll
    for (int ni = 0; ni < kNi; ni++) Weight::words(brow[ni] + b * Weight::kBytes, q, bw[ni]);
    __syncwarp();
    float xs[kMi][2];
#pragma unroll
    for (int mi = 0; mi < kMi; mi++) {
      xs[mi][0] = xscale[warp][16 * mi + g];
      xs[mi][1] = xscale[warp][16 * mi + 8 + g];
    }
#pragma unroll
    for (int ni = 0; ni < kNi; ni++) {
      const float ws[2] = {wscale[warp][8 * ni + 2 * q], wscale[warp][8 * ni + 2 * q + 1]};
#pragma unroll
      for (int mi = 0; mi < kMi; mi++) {
        int32_t d[4];
        mma_s8_16x8x32(d, a[mi], bw[ni], bias);
        // The block update of fast::blocks32_update, with float(isum) from the biased sum (an
        // MXFP4 block sum is at most 32·12·128 in magnitude, far below 2^22 too).
#pragma unroll
        for (int c = 0; c < 4; c++)
          acc[mi][ni][c] = fast::fma(arith::mul(ws[c % 2], xs[mi][c / 2]), unbias_isum(d[c]), acc[mi][ni][c]);
      }
    }
    __syncwarp();  // the scales are rewritten by the next block
  }

  gemm_slice_tree<kAcc, W>(&acc[0][0][0], partial, s, half, lane);
  if (s != 0) return;
  gemm_store(acc, x, t0, r0, rows, g, q, [](float v) { return v; });
}

}  // namespace ds4::cuda::kernels

// ds4_gemm_<format>_t32 (W = 1, 256 threads) and _t64 (W = 2, 512 threads), format q8_0 or mxfp4.
#define DS4_GEMM_BLOCKS32(NAME, WEIGHT, W, TOKENS) \
  extern "C" __global__ void __launch_bounds__(256 * W) \
      ds4_gemm_##NAME##_t##TOKENS(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, \
                                  int64_t act_row_bytes, int64_t n, float* out) { \
    namespace k = ds4::cuda::kernels; \
    const int64_t tile_tokens = k::kGemmWarpTokens * W, token_tiles = (n + tile_tokens - 1) / tile_tokens; \
    const k::GemmRows x{act, act_row_bytes, out, rows, nullptr, 1, n}; \
    k::gemm_blocks32<W, k::WEIGHT>(w, rows, cols, x, static_cast<int64_t>(blockIdx.x % token_tiles) * tile_tokens, \
                                   static_cast<int64_t>(blockIdx.x / token_tiles) * k::kGemmRows); \
  }
DS4_GEMM_BLOCKS32(q8_0, GemmQ8_0Weight, 1, 32)
DS4_GEMM_BLOCKS32(q8_0, GemmQ8_0Weight, 2, 64)
DS4_GEMM_BLOCKS32(mxfp4, GemmMxfp4Weight, 1, 32)
DS4_GEMM_BLOCKS32(mxfp4, GemmMxfp4Weight, 2, 64)
#undef DS4_GEMM_BLOCKS32
