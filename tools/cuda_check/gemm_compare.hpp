#pragma once
// The GPU-vs-CPU comparison of the prefill GEMM (engine/cuda/gemm.hpp), shared by the GoogleTest
// suite (tests/engine/cuda/gemm_gpu_test.cpp) and ds4-cuda-check: every output of gemm against
// the generic CPU Fast dot and against the device matvec run 8 activation rows at a time.
#include <cstdint>

#include "engine/quant/quant.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace ds4::cuda_check {

struct GemmShape {
  int64_t rows, cols;  // cols rounded up to whole blocks by shape_cols
  int n;               // activation rows
};
// Row and token tails of the 64 x 32 tile, one block to 128 blocks (every slice busy or not),
// tile-exact, and a model row width.
inline constexpr GemmShape kGemmShapes[] = {{1, 32, 9},       {70, 320, 45},    {64, 256, 32},
                                            {131, 1000, 100}, {1030, 4096, 64}, {200, 4096, 333}};

struct GemmCompareResult {
  CompareResult cpu;     // gemm vs the generic CPU Fast dot
  CompareResult matvec;  // gemm vs the device matvec per 8 rows
};

// matvec_inputs with n activation rows, then gemm on the device. Needs a usable device.
GemmCompareResult compare_gemm(quant::Type type, int64_t rows, int64_t cols, int n, uint32_t seed);

}  // namespace ds4::cuda_check
