#pragma once
// The GPU-vs-CPU comparison of the matvec kernels, shared by the GoogleTest suite
// (tests/engine/cuda/matvec_gpu_test.cpp) and ds4-cuda-check, which scripts/gpu-check.sh runs
// even where GoogleTest is not installed.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/quant/quant.hpp"

namespace ds4::cuda_check {

struct CompareResult {
  uint64_t compared = 0, mismatched = 0;
  std::string first_mismatch;  // empty when every output matched
};

// The comparison's host inputs: rows weight rows of row_bytes each (random, every 7th row scaled
// by 1e-6; with `special`, float-format subnormals, signed zeros and large values) and act_rows
// (default 8) activation rows of act_row_bytes each, row t random times t + 1, quantized to the
// format's vec_dot_type. The CUDA-thread emulator's tests (tests/engine/cuda/emulated_*_test.cpp)
// run the kernels on them too.
struct MatvecInputs {
  size_t row_bytes = 0, act_row_bytes = 0;
  std::vector<uint8_t> w, act;
};
MatvecInputs matvec_inputs(quant::Type type, int64_t rows, int64_t cols, bool special, uint32_t seed, int act_rows = 8);

// The reference: the generic CPU Fast dot (quant::dot with Isa{Generic, Fast}) of weight row r
// and activation row t.
float reference_dot(quant::Type type, const MatvecInputs& in, int64_t cols, int64_t r, int t);

// matvec_inputs, then every width 1..8 on the device against reference_dot, bit for bit. Needs a
// usable device.
CompareResult compare_matvec(quant::Type type, int64_t rows, int64_t cols, bool special, uint32_t seed);

// The shapes both runners use: one row, partial thread blocks, block counts that are and are not
// multiples of the 8 slices, a short last float block, model rows.
struct Shape {
  int64_t rows, cols;
  bool special;
};
inline constexpr Shape kShapes[] = {
    {1, 32, false}, {7, 32 * 33, false}, {3, 1000, false}, {131, 32 * 64, true}, {1030, 4096, false}};

// A shape's columns for `type`: cols rounded up to whole blocks (Q8_0 and MXFP4: 32; Q2_K, Q4_K,
// IQ2_XXS: 256, so 1, 5, 4, 8 and 16 super-blocks); the float formats take cols as it is.
inline int64_t shape_cols(quant::Type type, const Shape& s) {
  const int64_t block = quant::type_info(type).block_elems;
  return (s.cols + block - 1) / block * block;
}

}  // namespace ds4::cuda_check
