#pragma once
// Activation quantizers on the device (kernels/act_quant.cuh): f32 rows into the Q8_0 or Q8_K
// activation blocks the matvec kernels read (matvec.hpp), byte-identical to
// quant::quantize_activation (docs/quant.md §activation-quantization).
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::cuda {

// x: rows x n floats (row t at float offset t * n); out: rows activation rows of
// quant::act_row_bytes(type, n) bytes each, back to back. type is Q8_0 or Q8_K; n a multiple of
// its block (32, 256). Throws std::invalid_argument for another type, a bad n or buffers too
// small. Asynchronous.
void quantize_activation(quant::Type type, DeviceSpan x, int64_t rows, int64_t n, DeviceSpan out);

}  // namespace ds4::cuda
