#pragma once
// The attention's grouped low-rank output projection on the device (kernels/grouped_output.cuh),
// bit-identical to the CPU's model::grouped_output with Exec.exact = false: n_group matvecs, each
// over its heads' slice of the quantized heads row.
#include <cstddef>

#include "engine/cuda/device.hpp"
#include "engine/cuda/matvec.hpp"

namespace ds4::cuda {

// low[t][g][r] = dot(row g * rank + r of output_a, activation t's Q8_0 blocks of elements
// [g * group_dim, (g + 1) * group_dim)) for t < T <= 8, g < n_group, r < rank, where
// output_a is Q8_0 with n_group * rank rows of group_dim = output_a.cols columns, and act holds
// T rows of n_group * group_dim elements quantized to Q8_0 activation blocks, act_row_bytes apart.
// Throws std::invalid_argument for another format, T outside 1..8 or small buffers. Asynchronous.
void grouped_output(const DeviceWeight& output_a, int n_group, DeviceSpan act, size_t act_row_bytes, int T,
                    DeviceSpan low);

}  // namespace ds4::cuda
