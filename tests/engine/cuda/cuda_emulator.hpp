#pragma once
// A small CUDA-thread emulator so the real kernel sources (engine/cuda/kernels/*.cuh) run on the
// CPU in the tests without a GPU: include this header, then the .cuh files (compiled by the host
// compiler, so the shared `__host__ __device__` arithmetic takes its host branches: the same IEEE
// operations). Every CUDA thread is a fiber on one OS thread, blocks run one after another;
// __syncthreads and the warp shuffles are barriers over the block or the warp, and a barrier that
// can never be passed (a lane exited) aborts. It checks the arithmetic decomposition (which lane
// adds what, in which order), not the memory model, races, timing, real warp scheduling or
// performance. Only what the kernels use is provided: 1-D launches, threadIdx/blockIdx/blockDim/
// gridDim, uint4, __syncthreads, __shfl_{down,xor,}_sync on 4- and 8-byte values, __dp4a, the _rn
// intrinsics the kernels call outside the shared headers, static __shared__ and the dynamic
// shared memory of DS4_DYNAMIC_SHARED (engine/cuda/kernels/dynamic_shared.cuh).
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
