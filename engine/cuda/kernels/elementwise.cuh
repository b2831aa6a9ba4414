#pragma once
// The Fast order's scalar functions applied elementwise on the device
// (docs/arithmetic.md §transcendentals): each thread calls the same `__host__ __device__` function the CPU stages
// call (engine/quant/fast_math.hpp), so the GPU's silu, softplus and softmax weights have the
// CPU's bits. `op` numbers follow ds4::cuda::ElementwiseOp (elementwise.hpp).
#include <cstdint>

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
