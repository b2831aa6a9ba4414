#pragma once
// RMSNorm on the device in the Fast order (kernels/rms_norm.cuh), bit-identical to the CPU's
// engine/model/rms_norm.cpp with ex.exact = false (docs/arithmetic.md §rmsnorm).
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

// For each of `rows` rows of n floats (row t at float offset t * n): out = (x * r) * w with
// r = 1 / sqrt(mean(x^2) + eps), or x * r without the weight (w empty: DeviceSpan{}). out may be the same buffer
// as x. Throws std::invalid_argument when a buffer is too small. Asynchronous.
void rms_norm(DeviceSpan x, DeviceSpan w, DeviceSpan out, int64_t rows, int64_t n, float eps);

}  // namespace ds4::cuda
