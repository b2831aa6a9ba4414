#pragma once
// The Fast order's scalar functions applied elementwise on the device
// (docs/arithmetic.md §transcendentals): each thread calls the same `__host__ __device__` function the CPU stages
// call (engine/quant/fast_math.hpp), so the GPU's silu, softplus and softmax weights have the
// CPU's bits. `op` numbers follow ds4::cuda::ElementwiseOp (elementwise.hpp).
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

extern "C" __global__ void ds4_elementwise(int32_t op, const float* in, float* out, int64_t n) {
  namespace fast = ds4::quant::fast;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  float y;
  switch (op) {
    case 0: y = fast::exp(x); break;
    case 1: y = fast::sigmoid(x); break;
    case 2: y = fast::sigmoid_stable(x); break;
    case 3: y = fast::silu(x); break;
    default: y = fast::softplus(x); break;
  }
  out[i] = y;
}

// out[(t * n + h) * d + i] = a[t * d + i] + b[(t * n + h) * d + i]: one row of a added to each of
// n rows of b (the MTP block's input: the projected embedding plus each projected stream), one
// rounding as the CPU's loop. One thread per element of out.
extern "C" __global__ void ds4_add_broadcast(const float* a, const float* b, float* out, int64_t rows, int64_t n,
                                             int64_t d) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * n * d) return;
  out[i] = ds4::quant::arith::add(a[i / (n * d) * d + i % d], b[i]);
}
