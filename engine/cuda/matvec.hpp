#pragma once
// Matrix-vector products on the GPU for the eight weight formats (F32, F16, BF16, Q8_0, MXFP4,
// Q2_K, Q4_K, IQ2_XXS) and 1..8 activation rows, each output meant to be bit-identical to the
// CPU's Fast-order dot of the same weight row and activation row (quant::dot in Order::Fast, any
// ISA; docs/arithmetic.md). The first device kernels of the CUDA backend (docs/cuda.md).
#include <cstddef>
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/cuda/host_registration.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::cuda {

// A weight matrix the device reads: `rows` rows of `cols` elements in `type`'s GGUF layout, in
// device memory it owns (a copy) or in registered host memory (in place, docs/cuda.md §placement).
struct DeviceWeight {
  quant::Type type;
  int64_t rows = 0, cols = 0;
  DeviceSpan data;     // where the rows are
  DeviceBuffer owned;  // the copy, when data is one
};

// Copies a host weight to the device. Throws std::invalid_argument for a type without a device
// kernel (Q8_K, I32) or cols not a whole number of blocks.
DeviceWeight upload_weight(quant::Type type, const void* data, int64_t rows, int64_t cols);

// The same weight read in place from registered host memory (the GGUF mapping on a unified-memory
// device): no copy. Throws as upload_weight, and std::out_of_range when the rows are not all
// inside the registration.
DeviceWeight map_weight(quant::Type type, const HostRegistration& reg, const void* data, int64_t rows, int64_t cols);

// A weight over device memory someone else owns (a model's device weights): throws as
// upload_weight, and std::invalid_argument when `data` is not rows x cols of `type`.
DeviceWeight weight_over(quant::Type type, DeviceSpan data, int64_t rows, int64_t cols);

// The widest activation batch one call takes (the decode/verify widths).
constexpr int kMaxMatvecWidth = 8;

// out[t * w.rows + r] = dot(w row r, activation row t) for t < n. `act` holds n rows in the
// weight's vec_dot layout (Q8_0, MXFP4: quant's Q8_0 activation blocks; Q2_K, Q4_K, IQ2_XXS:
// Q8_K blocks; float formats: f32), act_row_bytes apart (a multiple of 4);
// `out` holds n * w.rows floats. Asynchronous: download (or Device::synchronize) waits.
void matvec(const DeviceWeight& w, DeviceSpan act, size_t act_row_bytes, int n, DeviceSpan out);

}  // namespace ds4::cuda
