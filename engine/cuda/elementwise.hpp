#pragma once
// Elementwise Fast-order functions on the device (kernels/elementwise.cuh), bit-identical to the
// CPU's engine/quant/fast_math.hpp: the activation functions and softmax weights of the forward.
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

enum class ElementwiseOp : int32_t { Exp = 0, Sigmoid = 1, SigmoidStable = 2, Silu = 3, Softplus = 4 };

// out[i] = op(in[i]) for i < n (both device buffers of at least n floats; std::invalid_argument
// otherwise). Asynchronous: download (or Device::synchronize) waits.
void elementwise(ElementwiseOp op, DeviceSpan in, DeviceSpan out, int64_t n);

// out[(t * n + h) * d + i] = a[t * d + i] + b[(t * n + h) * d + i] for t < rows, h < n, i < d:
// a row of `a` added to each of the n rows of b that follow it (one binary32 rounding each).
// out may be b. Throws std::invalid_argument for a bad shape or buffers too small. Asynchronous.
void add_broadcast(DeviceSpan a, DeviceSpan b, DeviceSpan out, int64_t rows, int64_t n, int64_t d);

}  // namespace ds4::cuda
