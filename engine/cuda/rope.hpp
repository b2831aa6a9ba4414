#pragma once
// RoPE rotation on the device (kernels/rope.cuh), bit-identical to the CPU's
// engine/model/rope.cpp rope_apply; the cos/sin tables come from the host's rope_angles with
// exact = false (docs/arithmetic.md §rope).
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

// x: rows x n_head x head_dim floats, the last n_rot dims of each head rotated in place;
// cs: rows x n_rot floats, row t's table (c0, s0, c1, s1, ...). n_rot even, at most head_dim.
// Throws std::invalid_argument on bad shapes or buffers too small. Asynchronous.
void rope(DeviceSpan x, DeviceSpan cs, int64_t rows, int32_t n_head, int32_t head_dim, int32_t n_rot);

}  // namespace ds4::cuda
