// The tensor-core GEMM kernels of every quantized format (engine/cuda/kernels/gemm_*.cuh) run on
// the CPU by the CUDA-thread emulator, whose mma (cuda_emulator.hpp) rebuilds A and B from the PTX
// fragment layout of kernels/mma.cuh: so this checks each kernel's lane/fragment mapping, weight
// decode, slices and tree against the generic CPU Fast dot bit for bit, with the launches of
// engine/cuda/gemm.cpp. Shapes with row tails (not a multiple of the tile or of 16), token tails,
// one block (seven idle slices), tile-exact; inputs of ds4-cuda-check.
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/gemm_blocks32.cuh"
#include "engine/cuda/kernels/gemm_iq2_xxs.cuh"
#include "engine/cuda/kernels/gemm_q2_k.cuh"
#include "engine/cuda/kernels/gemm_q4_k.cuh"
//
#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "engine/quant/fast_order.hpp"
#include "engine/quant/quant.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace {
using ds4::quant::Type;
namespace emu = ds4::cuda::emu;
namespace kernels = ds4::cuda::kernels;

// Every output against the generic CPU Fast dot, bit for bit; names the first that differs.
void compare(Type type, int64_t rows, int64_t cols, int n, int per_slice, const ds4::cuda_check::MatvecInputs& in,
             const std::vector<float>& out) {
  uint64_t bad = 0;
  std::string first;
  for (int t = 0; t < n; t++)
    for (int64_t r = 0; r < rows; r++) {
      const float want = ds4::cuda_check::reference_dot(type, in, cols, r, t);
      const float got = out[size_t(t) * rows + r];
      if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want) && bad++ == 0)
        first = "row " + std::to_string(r) + " act " + std::to_string(t) + ": emulated " + std::to_string(got) +
                ", CPU " + std::to_string(want);
    }
  EXPECT_EQ(bad, 0u) << rows << "x" << cols << " n " << n << ", " << per_slice << " warps a slice: " << first;
}

// The biased conversion equals fast::i2f for every block sum it can see (and far beyond).
TEST(EmulatedGemm, UnbiasedSumIsTheIntToFloatConversion) {
  for (int32_t i = -(1 << 22) + 1; i < (1 << 22); i++) {
    const float got = kernels::unbias_isum(i + kernels::kMmaFloatBias), want = ds4::quant::fast::i2f(i);
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << i;
  }
}

// Q8_0 and MXFP4 (kernels/gemm_blocks32.cuh), both kernels of each, as gemm.cpp launches them.
using Blocks32Kernel = void (*)(const uint8_t*, int64_t, int64_t, const uint8_t*, int64_t, int64_t, float*);
void check_blocks32(Type type, Blocks32Kernel t32, Blocks32Kernel t64, uint32_t seed) {
  struct Shape {
    int64_t rows, cols;
    int n;
  };
  const Shape shapes[] = {{1, 32, 9}, {70, 320, 45}, {64, 256, 32}, {13, 64, 17}, {129, 32 * 17, 40}, {70, 96, 100}};
  for (const auto& s : shapes) {
    const auto in = ds4::cuda_check::matvec_inputs(type, s.rows, s.cols, false, seed++, s.n);
    for (const int per_slice : {1, 2}) {
      const int64_t tile_tokens = kernels::kGemmWarpTokens * per_slice;
      const int64_t tiles =
          (s.rows + kernels::kGemmRows - 1) / kernels::kGemmRows * ((s.n + tile_tokens - 1) / tile_tokens);
      std::vector<float> out(size_t(s.n) * s.rows, -1.0f);
      emu::launch(unsigned(tiles), 256 * per_slice, 0, [&] {
        (per_slice == 1 ? t32 : t64)(in.w.data(), s.rows, s.cols, in.act.data(), int64_t(in.act_row_bytes), s.n,
                                     out.data());
      });
      compare(type, s.rows, s.cols, s.n, per_slice, in, out);
    }
  }
}

TEST(EmulatedGemm, Q8_0BitIdenticalToGenericCpuFastDot) {
  check_blocks32(Type::Q8_0, ds4_gemm_q8_0_t32, ds4_gemm_q8_0_t64, 7);
}
TEST(EmulatedGemm, MXFP4BitIdenticalToGenericCpuFastDot) {
  check_blocks32(Type::MXFP4, ds4_gemm_mxfp4_t32, ds4_gemm_mxfp4_t64, 17);
}

// Q4_K, Q2_K and IQ2_XXS: 256-element blocks, 32 x 32 tiles; row tails of the tile and of 16, token tails,
// one block (seven idle slices) and nine (slice 0 takes two).
using KquantKernel = void (*)(const uint8_t*, int64_t, int64_t, const uint8_t*, int64_t, int64_t, float*);
void check_kquant(Type type, KquantKernel kernel, uint32_t seed) {
  struct Shape {
    int64_t rows, cols;
    int n;
  };
  const Shape shapes[] = {{1, 256, 9}, {45, 256 * 3, 40}, {32, 256 * 9, 32}, {13, 512, 17}};
  for (const auto& s : shapes) {
    const auto in = ds4::cuda_check::matvec_inputs(type, s.rows, s.cols, false, seed++, s.n);
    const int64_t tiles = (s.rows + 31) / 32 * ((s.n + 31) / 32);
    std::vector<float> out(size_t(s.n) * s.rows, -1.0f);
    emu::launch(unsigned(tiles), 256, 0, [&] {
      kernel(in.w.data(), s.rows, s.cols, in.act.data(), int64_t(in.act_row_bytes), s.n, out.data());
    });
    compare(type, s.rows, s.cols, s.n, 1, in, out);
  }
}

TEST(EmulatedGemm, Q4_KBitIdenticalToGenericCpuFastDot) { check_kquant(Type::Q4_K, ds4_gemm_q4_k, 21); }
TEST(EmulatedGemm, Q2_KBitIdenticalToGenericCpuFastDot) { check_kquant(Type::Q2_K, ds4_gemm_q2_k, 31); }
TEST(EmulatedGemm, IQ2_XXSBitIdenticalToGenericCpuFastDot) { check_kquant(Type::IQ2_XXS, ds4_gemm_iq2_xxs, 41); }

}  // namespace
