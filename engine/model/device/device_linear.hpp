#pragma once
// Weight x activation on the device, as engine/model/linear.cpp does it on the CPU in Fast mode:
// the activation format is the weight's vec_dot type (Q8_0 and MXFP4 weights: Q8_0 blocks; the
// K-quants and IQ2_XXS: Q8_K; float weights: f32), quantized on the device, then the matvec
// kernels eight activation rows at a time (the per-row bits do not depend on the grouping).
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/cuda/matvec.hpp"

namespace ds4::model::device {

// The n rows of `x` (cols floats each) in the activation layout of `weight_type`'s vec_dot type,
// quantized into `buf` (grown as needed), or x itself for float weights; row_bytes gets the
// stride. Asynchronous.
cuda::DeviceSpan activation_rows(quant::Type weight_type, cuda::DeviceSpan x, int n, int64_t cols,
                                 cuda::DeviceBuffer& buf, size_t& row_bytes);

// out[t * w.rows + r] = w row r . x row t for T rows of w.cols floats in x. `act` is scratch the
// function grows as needed. Throws std::invalid_argument for buffers too small. Asynchronous.
void project(const cuda::DeviceWeight& w, cuda::DeviceSpan x, int T, cuda::DeviceSpan out, cuda::DeviceBuffer& act);

}  // namespace ds4::model::device
