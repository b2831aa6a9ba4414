#pragma once
// The one int8 tensor-core instruction the GEMM kernels use, behind a small device function so
// that the CUDA-thread emulator (tests/engine/cuda/cuda_emulator.hpp) can run it on the CPU: there
// the warp's 32 lanes exchange their fragment registers and each lane computes its four outputs
// from the layout below, so an emulated test checks a kernel's lane/fragment mapping. Integer
// products and sums are exact, so the device and the emulator give the same int32 bits.
#include <cstdint>

#include "engine/quant/block_arith.hpp"

namespace ds4::cuda::kernels {

// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (PTX ISA, "Matrix Fragments for mma.m16n8k32",
// integer types; sm_80 and later): D = A·B + C, A 16x32 s8, B 32x8 s8, C and D 16x8 s32, int32
// wrap-around (no .satfinite). Lane l, g = l / 4, q = l % 4; byte j = bits 8j..8j+7 of a register:
//   a[0]: A[g][4q + j]    a[1]: A[g + 8][4q + j]    a[2]: A[g][16 + 4q + j]    a[3]: A[g + 8][16 + 4q + j]
//   b[0]: B[4q + j][g]    b[1]: B[16 + 4q + j][g]
//   c, d[0]: (g, 2q)   d[1]: (g, 2q + 1)   d[2]: (g + 8, 2q)   d[3]: (g + 8, 2q + 1)
// So a lane's A bytes are 4 consecutive k of one row and its B bytes 4 consecutive k of one column:
// both are 32-bit words of rows stored k-contiguous (weights and activations alike).
__device__ __forceinline__ void mma_s8_16x8x32(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                               const int32_t (&c)[4]) {
#if defined(__CUDACC__)
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
#else
  ds4_emulated_mma_s8_16x8x32(d, a, b, c);
#endif
}

// float(isum) without an int-to-float conversion (16 a clock per SM, against 128 adds): the mma
// accumulates onto C = kMmaFloatBias, the bits of 1.5·2^23, so for |isum| < 2^22 the int32 result
// is the binary32 1.5·2^23 + isum exactly, and subtracting 1.5·2^23 is exact. Same value and sign
// of zero as fast::i2f(isum) (a Q8_0 block sum is at most 32·128·128 = 2^19 in magnitude).
constexpr int32_t kMmaFloatBias = 0x4B400000;
__device__ __forceinline__ float unbias_isum(int32_t biased) {
  return quant::arith::add(quant::arith::bits_to_f32(static_cast<uint32_t>(biased)), -12582912.0f);
}

}  // namespace ds4::cuda::kernels
