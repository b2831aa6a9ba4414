#pragma once
// Weight matrix times n activation rows on the GPU (prefill widths): out[t * w.rows + r] =
// dot(w row r, activation row t), each output bit-identical to the CPU's Fast dot and therefore
// to matvec of its row (docs/arithmetic.md §matrix-matrix). n <= kMaxMatvecWidth is one matvec;
// above, the quantized formats (Q8_0, MXFP4, Q4_K, Q2_K, IQ2_XXS) run int8 tensor-core kernels
// (kernels/gemm_*.cuh; docs/cuda.md §gemm) and the float formats the matvec kernels 8 activation
// rows at a time.
#include <cstddef>

#include "engine/cuda/device.hpp"
#include "engine/cuda/matvec.hpp"

namespace ds4::cuda {

// `act`: n rows in the weight's vec_dot layout, act_row_bytes apart (a multiple of 4), as for
// matvec; `out`: n * w.rows floats. Asynchronous. Throws std::invalid_argument for n < 1, a format
// without a device kernel, buffers too small or a misaligned row stride.
void gemm(const DeviceWeight& w, DeviceSpan act, size_t act_row_bytes, int n, DeviceSpan out);

// True when gemm(w, ..., n, ...) runs a tensor-core kernel (a quantized format and n > 8).
bool gemm_uses_tensor_cores(const DeviceWeight& w, int n);

}  // namespace ds4::cuda
