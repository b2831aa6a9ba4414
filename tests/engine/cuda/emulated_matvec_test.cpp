// The real matvec kernels of all eight formats (engine/cuda/kernels/matvec.cuh,
// matvec_blocks.cuh), run on the CPU by the CUDA-thread emulator (cuda_emulator.hpp) with the
// launch of engine/cuda/matvec.cpp (four warps a block, one a row), widths 1..8, against the
// generic CPU Fast dot bit for bit on the inputs ds4-cuda-check prepares (matvec_compare.hpp).
// The lane split, shuffles and slice trees are checked on every machine; the device's own rounding
// only by cuda_gpu_tests on a GPU. Small shapes with the tails: one row; 5, 9 and 13 rows (partial
// thread blocks); block counts 1, 10, 32 and 74, short last float blocks.
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/matvec_blocks.cuh"
//
#include <gtest/gtest.h>

#include <bit>
#include <ostream>
#include <string>
#include <vector>

#include "engine/quant/quant.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace {
using ds4::quant::Type;
namespace fast = ds4::quant::fast;
namespace emu = ds4::cuda::emu;

using Kernel = void (*)(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t stride, float* out);

// The float kernels take typed pointers (and the activation stride in floats).
template <auto K, class Elem>
void float_kernel(const uint8_t* w, int64_t rows, int64_t cols, const uint8_t* act, int64_t stride, float* out) {
  K(reinterpret_cast<const typename Elem::T*>(w), rows, cols, reinterpret_cast<const float*>(act), stride, out);
}

#define DS4_WIDTHS(F) \
  { F(1), F(2), F(3), F(4), F(5), F(6), F(7), F(8) }
#define DS4_BYTES(NAME, N) ds4_matvec_##NAME##_w##N
#define DS4_Q8_0(N) DS4_BYTES(q8_0, N)
#define DS4_MXFP4(N) DS4_BYTES(mxfp4, N)
#define DS4_Q2_K(N) DS4_BYTES(q2_k, N)
#define DS4_Q4_K(N) DS4_BYTES(q4_k, N)
#define DS4_IQ2_XXS(N) DS4_BYTES(iq2_xxs, N)
#define DS4_F16(N) &float_kernel<ds4_matvec_f16_w##N, fast::F16Elem>
#define DS4_BF16(N) &float_kernel<ds4_matvec_bf16_w##N, fast::Bf16Elem>
#define DS4_F32(N) &float_kernel<ds4_matvec_f32_w##N, fast::F32Elem>

struct Format {
  Type type;
  Kernel widths[8];
  bool float_act;  // stride in floats
};
const Format kFormats[] = {
    {Type::Q8_0, DS4_WIDTHS(DS4_Q8_0), false},   {Type::F16, DS4_WIDTHS(DS4_F16), true},
    {Type::BF16, DS4_WIDTHS(DS4_BF16), true},    {Type::F32, DS4_WIDTHS(DS4_F32), true},
    {Type::MXFP4, DS4_WIDTHS(DS4_MXFP4), false}, {Type::Q2_K, DS4_WIDTHS(DS4_Q2_K), false},
    {Type::Q4_K, DS4_WIDTHS(DS4_Q4_K), false},   {Type::IQ2_XXS, DS4_WIDTHS(DS4_IQ2_XXS), false},
};

// gtest names the format on a failure, not the struct's bytes.
void PrintTo(const Format& f, std::ostream* os) { *os << ds4::quant::type_info(f.type).name; }

class EmulatedMatvec : public ::testing::TestWithParam<Format> {};

TEST_P(EmulatedMatvec, BitIdenticalToGenericCpuFastDot) {
  const Format& f = GetParam();
  // Columns before shape_cols rounds them to whole blocks: 32 (one block), 300 (10 blocks, the
  // last float block 12 long; K-quants: 2 super-blocks), 1000 (32 blocks, the last float block 8
  // long; K-quants: 4 super-blocks), 2344 (74 blocks; K-quants: 10 super-blocks).
  const ds4::cuda_check::Shape shapes[] = {{1, 32, false}, {5, 300, true}, {13, 1000, false}, {9, 2344, false}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const int64_t rows = s.rows, cols = ds4::cuda_check::shape_cols(f.type, s);
    const auto in = ds4::cuda_check::matvec_inputs(f.type, rows, cols, s.special, seed++);
    const int64_t stride = int64_t(f.float_act ? in.act_row_bytes / sizeof(float) : in.act_row_bytes);
    for (int width = 1; width <= 8; width++) {
      std::vector<float> out(size_t(width) * rows);
      emu::launch(unsigned((rows + 3) / 4), 128, 0,
                  [&] { f.widths[width - 1](in.w.data(), rows, cols, in.act.data(), stride, out.data()); });
      uint64_t bad = 0;
      std::string first;
      for (int t = 0; t < width; t++)
        for (int64_t r = 0; r < rows; r++) {
          const float want = ds4::cuda_check::reference_dot(f.type, in, cols, r, t);
          const float got = out[size_t(t) * rows + r];
          if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want) && bad++ == 0)
            first = "row " + std::to_string(r) + " act " + std::to_string(t) + ": emulated " + std::to_string(got) +
                    ", CPU " + std::to_string(want);
        }
      EXPECT_EQ(bad, 0u) << rows << "x" << cols << " width " << width << ": " << first;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EmulatedMatvec, ::testing::ValuesIn(kFormats),
                         [](const auto& i) { return std::string(ds4::quant::type_info(i.param.type).name); });

}  // namespace
