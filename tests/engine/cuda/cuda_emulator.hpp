#pragma once
// A small CUDA-thread emulator so the real kernel sources (engine/cuda/kernels/*.cuh) run on the
// CPU in the tests without a GPU: include this header, then the .cuh files (compiled by the host
// compiler, so the shared `__host__ __device__` arithmetic takes its host branches: the same IEEE
// operations). Every CUDA thread is a fiber on one OS thread, blocks run one after another;
// __syncthreads and the warp shuffles are barriers over the block or the warp, and a barrier that
// can never be passed (a lane exited) aborts. It checks the arithmetic decomposition (which lane
// adds what, in which order), not the memory model, races, timing, real warp scheduling or
// performance. Only what the kernels use is provided: 1-D launches, threadIdx/blockIdx/blockDim/
// gridDim, uint4, __syncthreads, __syncwarp, __shfl_{down,xor,}_sync on 4- and 8-byte values,
// __dp4a, __byte_perm, the int8 mma of engine/cuda/kernels/mma.cuh, the _rn intrinsics the
// kernels call outside the shared headers, static __shared__ and DS4_DYNAMIC_SHARED
// (kernels/dynamic_shared.cuh).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#if defined(__CUDACC__)
#error "cuda_emulator.hpp is for host compilers; nvcc compiles the kernels for the device"
#endif

#define __global__ inline  // several test files include the same kernels
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct uint4 {  // the 16-byte word of stream_copy.cuh
  unsigned x, y, z, w;
};
struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline EmuDim3 threadIdx, blockIdx, blockDim, gridDim;  // set by the scheduler before each switch

namespace ds4::cuda::emu {

// Runs `kernel` as grid blocks of `block` threads (1..1024), with `dynamic_shared` bytes of
// dynamic shared memory (filled with 0xff bytes before each block, so an unwritten read shows).
void launch(unsigned grid, unsigned block, size_t dynamic_shared, const std::function<void()>& kernel);

// The barriers the intrinsics below stand on; `exchange` is one shuffle: it publishes the
// lane's 8 bytes, waits for the whole warp and returns the bytes of lane `src` (0..31).
void sync_block();
uint64_t exchange(uint64_t mine, unsigned src);
void* dynamic_shared();
// A warp-wide gather: publishes the lane's `words` (at most 8) 32-bit words, waits for the whole
// warp and copies every lane's into all[lane * words + i]. Also a barrier over the warp.
void gather(const uint32_t* mine, unsigned words, uint32_t* all);

template <class T>
T shuffle(T v, unsigned src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(bits, src);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

}  // namespace ds4::cuda::emu

inline void* ds4_emulated_dynamic_shared() { return ds4::cuda::emu::dynamic_shared(); }

inline void __syncthreads() { ds4::cuda::emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  uint32_t none = 0;
  ds4::cuda::emu::gather(&none, 0, &none);
}

// Full-warp shuffles (the kernels pass 0xffffffff; width 32).
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return ds4::cuda::emu::shuffle(v, static_cast<unsigned>(src) % 32);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta) {
  const unsigned lane = threadIdx.x % 32;
  return ds4::cuda::emu::shuffle(v, lane + delta < 32 ? lane + delta : lane);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  return ds4::cuda::emu::shuffle(v, (threadIdx.x % 32) ^ static_cast<unsigned>(mask));
}

// c + the four products of the signed bytes of a and b (exact in int32 for these ranges).
inline int __dp4a(int a, int b, int c) {
  for (int k = 0; k < 4; k++)
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * k)) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * k));
  return c;
}

// Byte i of the result is byte (s >> 4i) & 7 of the 8 bytes {x, y} (the default mode; the
// kernels never set the sign-replicate bit 3).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t bytes = static_cast<uint64_t>(y) << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}

// Correctly rounded in both: the host's IEEE operations (-ffp-contract=off).
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline float __double2float_rn(double x) { return static_cast<float>(x); }

// Fibers switch only at barriers, so a plain read-modify-write is atomic here.
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}

// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 for mma_s8_16x8x32 (engine/cuda/kernels/mma.cuh):
// the warp's fragment registers are gathered, A (16x32) and B (32x8) rebuilt from the PTX layout
// written there, and this lane's four outputs computed (int32 wrap-around, as the instruction).
inline void ds4_emulated_mma_s8_16x8x32(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                        const int32_t (&c)[4]) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  uint32_t all[32][6];
  ds4::cuda::emu::gather(mine, 6, &all[0][0]);
  auto byte = [](uint32_t word, int j) { return static_cast<int32_t>(static_cast<int8_t>(word >> (8 * j))); };
  int32_t A[16][32], B[32][8];
  for (int l = 0; l < 32; l++) {
    const int g = l / 4, q = l % 4;
    for (int j = 0; j < 4; j++) {
      A[g][4 * q + j] = byte(all[l][0], j);
      A[g + 8][4 * q + j] = byte(all[l][1], j);
      A[g][16 + 4 * q + j] = byte(all[l][2], j);
      A[g + 8][16 + 4 * q + j] = byte(all[l][3], j);
      B[4 * q + j][g] = byte(all[l][4], j);
      B[16 + 4 * q + j][g] = byte(all[l][5], j);
    }
  }
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, q = lane % 4;
  int32_t out[4];
  for (int i = 0; i < 4; i++) {
    const int m = g + 8 * (i / 2), n = 2 * q + i % 2;
    uint32_t sum = static_cast<uint32_t>(c[i]);
    for (int k = 0; k < 32; k++) sum += static_cast<uint32_t>(A[m][k] * B[k][n]);
    out[i] = static_cast<int32_t>(sum);
  }
  for (int i = 0; i < 4; i++) d[i] = out[i];
}
