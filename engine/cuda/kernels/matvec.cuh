#pragma once
// Q8_0 and float-format (F16, BF16, F32) matrix-vector products for 1..8 activation rows in the
// Fast order (docs/arithmetic.md §slices, §quantized-dot, §float-dot), bit-identical to the
// generic CPU Fast dots (engine/quant/arch/generic/dots_fast_generic.cpp): the float steps are
// the same `__host__ __device__` functions (fast_order.hpp, fast_blocks.hpp, block_arith.hpp)
// and the integer block dot is __dp4a, which is exact. One warp per weight row; how its lanes
// map onto the contract's slices is said above each kernel (docs/cuda.md §order). The other
// quantized formats: matvec_blocks.cuh.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_blocks.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::cuda::kernels {
namespace arith = ds4::quant::arith;
namespace fast = ds4::quant::fast;

constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFull = 0xffffffffu;

// Q8_0 weight rows are 34-byte blocks {f16 d; i8 q[32]}; activation rows are 36-byte blocks
// {f32 d; i8 q[32]}. Lanes 4s..4s+3 own slice s: at step i the warp reads the eight adjacent
// blocks 8i..8i+7 (272 contiguous bytes), lanes 4s..4s+3 block 8i+s, each lane an 8-byte quarter
// of it (two __dp4a); integer shuffles, which are exact, give the block's sum, then every lane of
// the slice applies the block update (the same value in all four). The slices meet in the tree
// by three __shfl_xor_sync levels (xor 4, 8, 16 pair slice s with s^1, s^2, s^4; addition is
// commutative, so both partners hold the same bits).
// matvec_q8_0_row is one warp's row (wrow: its first block), out[t * out_stride] for activation t.
template <int N>
__device__ void matvec_q8_0_row(const uint8_t* __restrict__ wrow, int64_t cols, const uint8_t* __restrict__ act,
                                int64_t act_row_bytes, float* __restrict__ out, int64_t out_stride) {
  const int lane = threadIdx.x % 32;
  const int64_t nb = cols / 32;
  const int s = lane / 4, quarter = lane % 4;
  float acc[N];
#pragma unroll
  for (int t = 0; t < N; t++) acc[t] = 0.0f;
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
    const int64_t b = b0 + s;
    const bool live = b < nb;
    int32_t isum[N];
    uint16_t wd = 0;
    if (live) {
      const uint16_t* blk = reinterpret_cast<const uint16_t*>(wrow + b * 34);  // 2-byte aligned
      wd = blk[0];
      const int32_t wq0 = static_cast<int32_t>(static_cast<uint32_t>(blk[1 + 4 * quarter]) |
                                               static_cast<uint32_t>(blk[2 + 4 * quarter]) << 16);
      const int32_t wq1 = static_cast<int32_t>(static_cast<uint32_t>(blk[3 + 4 * quarter]) |
                                               static_cast<uint32_t>(blk[4 + 4 * quarter]) << 16);
#pragma unroll
      for (int t = 0; t < N; t++) {
        const int32_t* xq = reinterpret_cast<const int32_t*>(act + t * act_row_bytes + b * 36 + 4 + 8 * quarter);
        isum[t] = __dp4a(wq1, xq[1], __dp4a(wq0, xq[0], 0));
      }
    } else {
#pragma unroll
      for (int t = 0; t < N; t++) isum[t] = 0;
    }
#pragma unroll
    for (int t = 0; t < N; t++) {
      isum[t] += __shfl_xor_sync(kFull, isum[t], 1);
      isum[t] += __shfl_xor_sync(kFull, isum[t], 2);
    }
    if (live) {
      const float scale = arith::f16_to_f32(wd);
#pragma unroll
      for (int t = 0; t < N; t++) {
        const float xd = *reinterpret_cast<const float*>(act + t * act_row_bytes + b * 36);
        acc[t] = fast::blocks32_update(acc[t], scale, xd, isum[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < N; t++) {
    float v = acc[t];
    v = arith::add(v, __shfl_xor_sync(kFull, v, 4));
    v = arith::add(v, __shfl_xor_sync(kFull, v, 8));
    v = arith::add(v, __shfl_xor_sync(kFull, v, 16));
    if (lane == 0) out[t * out_stride] = v;
  }
}

template <int N>
__device__ void matvec_q8_0(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, const uint8_t* __restrict__ act,
                            int64_t act_row_bytes, float* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  matvec_q8_0_row<N>(w + row * (cols / 32) * 34, cols, act, act_row_bytes, out + row, rows);
}

// Float weight rows are `cols` elements of Elem::T (F16, BF16: halves; F32: floats); activation
// rows are `cols` floats, act_row_floats apart. The warp walks the 32-element blocks in order,
// eight at a time (one per slice, so the slice of each is fixed by the unrolled position): lane l
// forms product l of the block, the halving tree is five __shfl_down_sync levels (lane i adds
// lane i+h: the contract's p[i] + p[i+h]), and lane 0's value, broadcast, enters the slice sum
// that every lane keeps.
template <int N, class Elem>
__device__ void matvec_float(const typename Elem::T* __restrict__ w, int64_t rows, int64_t cols,
                             const float* __restrict__ act, int64_t act_row_floats, float* __restrict__ out) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= rows) return;
  const typename Elem::T* wrow = w + row * cols;
  const int64_t nb = (cols + 31) / 32;
  float part[N][fast::kSlices];
#pragma unroll
  for (int t = 0; t < N; t++)
#pragma unroll
    for (int s = 0; s < fast::kSlices; s++) part[t][s] = 0.0f;
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
#pragma unroll
    for (int s = 0; s < fast::kSlices; s++) {
      const int64_t b = b0 + s;
      if (b >= nb) break;  // uniform across the warp
      const int64_t i = b * 32 + lane;
      const float wv = i < cols ? Elem::load(wrow[i]) : 0.0f;
#pragma unroll
      for (int t = 0; t < N; t++) {
        float p = i < cols ? arith::mul(wv, act[t * act_row_floats + i]) : 0.0f;
#pragma unroll
        for (int d = 16; d >= 1; d /= 2) p = arith::add(p, __shfl_down_sync(kFull, p, d));
        part[t][s] = arith::add(part[t][s], __shfl_sync(kFull, p, 0));
      }
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < N; t++) out[t * rows + row] = fast::tree(part[t]);
  }
}

}  // namespace ds4::cuda::kernels

// Instantiates M(N) for every width a matvec launch takes (1..kMaxMatvecWidth of matvec.hpp).
#define DS4_MATVEC_FOR_WIDTHS(M) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8)

#define DS4_MATVEC_FLOAT(NAME, ELEM, N) \
  extern "C" __global__ void __launch_bounds__(128) \
      ds4_matvec_##NAME##_w##N(const ds4::quant::fast::ELEM::T* w, int64_t rows, int64_t cols, const float* act, \
                               int64_t act_row_floats, float* out) { \
    ds4::cuda::kernels::matvec_float<N, ds4::quant::fast::ELEM>(w, rows, cols, act, act_row_floats, out); \
  }
#define DS4_MATVEC_WIDTH(N) \
  extern "C" __global__ void __launch_bounds__(128) ds4_matvec_q8_0_w##N( \
      const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t act_row_bytes, float* out) { \
    ds4::cuda::kernels::matvec_q8_0<N>(w, rows, cols, act, act_row_bytes, out); \
  } \
  DS4_MATVEC_FLOAT(f16, F16Elem, N) \
  DS4_MATVEC_FLOAT(bf16, Bf16Elem, N) \
  DS4_MATVEC_FLOAT(f32, F32Elem, N)
DS4_MATVEC_FOR_WIDTHS(DS4_MATVEC_WIDTH)
#undef DS4_MATVEC_WIDTH
#undef DS4_MATVEC_FLOAT
