#pragma once
// Q8_0 and F16 matrix-vector products for 1..8 activation rows, bit-identical to the generic CPU
// dots (engine/quant/arch/generic/dots_generic.cpp). One warp per weight row. The lanes compute
// 32 consecutive terms in parallel (a Q8_0 block's term, or an F16 element's), then every lane
// adds them to its running sums in index order, taking each term from its lane with a shuffle:
// exactly the serial order of the CPU, with the per-term arithmetic from block_arith.hpp. The
// integer block dot uses __dp4a, which is exact, so it equals arith::q8_0_block_isum. The serial
// float chain makes F16 compute-bound; docs/cuda.md §order says why and what replaces it.
#include <cstdint>

#include "engine/quant/block_arith.hpp"

namespace ds4::cuda::kernels {
namespace arith = ds4::quant::arith;

constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFull = 0xffffffffu;

// Q8_0 weight rows are 34-byte blocks {f16 d; i8 q[32]}; activation rows are 36-byte blocks
// {f32 d; i8 q[32]}. A warp stages 32 weight blocks (1088 bytes, 2-byte aligned) in shared
// memory with coalesced 16-bit loads, then lane l takes block l.
template <int N>
__device__ void matvec_q8_0(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, const uint8_t* __restrict__ act,
                            int64_t act_row_bytes, float* __restrict__ out) {
  __shared__ uint16_t stage[kWarpsPerBlock][32 * 17];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= rows) return;
  const int64_t nb = cols / 32;
  const uint16_t* wrow = reinterpret_cast<const uint16_t*>(w + row * nb * 34);
  uint16_t* s = stage[warp];
  float acc[N];
#pragma unroll
  for (int t = 0; t < N; t++) acc[t] = 0.0f;
  for (int64_t b0 = 0; b0 < nb; b0 += 32) {
    const int nblk = nb - b0 < 32 ? static_cast<int>(nb - b0) : 32;
    for (int i = lane; i < nblk * 17; i += 32) s[i] = wrow[b0 * 17 + i];
    __syncwarp();
    float term[N];
    if (lane < nblk) {
      const uint16_t* blk = s + lane * 17;
      int32_t wq[8];
#pragma unroll
      for (int k = 0; k < 8; k++)
        wq[k] =
            static_cast<int32_t>(static_cast<uint32_t>(blk[1 + 2 * k]) | static_cast<uint32_t>(blk[2 + 2 * k]) << 16);
#pragma unroll
      for (int t = 0; t < N; t++) {
        const uint8_t* xb = act + t * act_row_bytes + (b0 + lane) * 36;
        const float xd = *reinterpret_cast<const float*>(xb);
        const int32_t* xq = reinterpret_cast<const int32_t*>(xb + 4);
        int32_t isum = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) isum = __dp4a(wq[k], xq[k], isum);
        term[t] = arith::q8_0_block_term(blk[0], xd, isum);
      }
    } else {
#pragma unroll
      for (int t = 0; t < N; t++) term[t] = 0.0f;
    }
    __syncwarp();
    for (int j = 0; j < nblk; j++) {
#pragma unroll
      for (int t = 0; t < N; t++) acc[t] = arith::accumulate(acc[t], __shfl_sync(kFull, term[t], j));
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < N; t++) out[t * rows + row] = acc[t];
  }
}

// F16 weight rows are `cols` halves; activation rows are `cols` floats, act_row_bytes apart.
template <int N>
__device__ void matvec_f16(const uint16_t* __restrict__ w, int64_t rows, int64_t cols, const float* __restrict__ act,
                           int64_t act_row_floats, float* __restrict__ out) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= rows) return;
  const uint16_t* wrow = w + row * cols;
  float acc[N];
#pragma unroll
  for (int t = 0; t < N; t++) acc[t] = 0.0f;
  for (int64_t i0 = 0; i0 < cols; i0 += 32) {
    const int n = cols - i0 < 32 ? static_cast<int>(cols - i0) : 32;
    float term[N];
    const uint16_t h = lane < n ? wrow[i0 + lane] : 0;
#pragma unroll
    for (int t = 0; t < N; t++) term[t] = lane < n ? arith::f16_term(h, act[t * act_row_floats + i0 + lane]) : 0.0f;
    for (int j = 0; j < n; j++) {
#pragma unroll
      for (int t = 0; t < N; t++) acc[t] = arith::accumulate(acc[t], __shfl_sync(kFull, term[t], j));
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < N; t++) out[t * rows + row] = acc[t];
  }
}

}  // namespace ds4::cuda::kernels

#define DS4_MATVEC_WIDTH(N) \
  extern "C" __global__ void __launch_bounds__(128) ds4_matvec_q8_0_w##N( \
      const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, float* out) { \
    ds4::cuda::kernels::matvec_q8_0<N>(w, rows, cols, act, act_row_bytes, out); \
  } \
  extern "C" __global__ void __launch_bounds__(128) ds4_matvec_f16_w##N( \
      const uint16_t* w, int64_t rows, int64_t cols, const float* act, int64_t act_row_floats, float* out) { \
    ds4::cuda::kernels::matvec_f16<N>(w, rows, cols, act, act_row_floats, out); \
  }
DS4_MATVEC_WIDTH(1)
DS4_MATVEC_WIDTH(2)
DS4_MATVEC_WIDTH(3)
DS4_MATVEC_WIDTH(4)
DS4_MATVEC_WIDTH(5)
DS4_MATVEC_WIDTH(6)
DS4_MATVEC_WIDTH(7)
DS4_MATVEC_WIDTH(8)
#undef DS4_MATVEC_WIDTH
