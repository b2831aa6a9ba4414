// The real device activation quantizers (engine/cuda/kernels/act_quant.cuh) run on the CPU by the
// CUDA-thread emulator with the launch shape of engine/cuda/act_quant.cpp, against the CPU's
// quantize_activation byte for byte (the portable Traits function and best_isa()'s kernel): Q8_0
// and Q8_K, block counts that leave the last CUDA block part empty, ties to even, zero blocks,
// equal |x| of both signs (Q8_K keeps the first one's sign), -0 and tiny values.
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/act_quant.cuh"
//
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/hc_cases.hpp"

namespace {
using namespace ds4::cuda::test;
namespace emu = ds4::cuda::emu;
namespace quant = ds4::quant;

void check(quant::Type type, const std::vector<float>& x, int64_t rows, int64_t n) {
  const size_t bytes = size_t(rows) * quant::act_row_bytes(type, n);
  std::vector<uint8_t> want(bytes), want_isa(bytes), got(bytes, 0xa5);
  for (int64_t r = 0; r < rows; r++) {
    const size_t off = size_t(r) * quant::act_row_bytes(type, n);
    quant::traits(type).quantize_activation(x.data() + r * n, want.data() + off, n);
    quant::quantize_activation(type, x.data() + r * n, want_isa.data() + off, n);
  }
  ASSERT_EQ(want, want_isa) << "the CPU's kernels disagree";
  const bool q8_0 = type == quant::Type::Q8_0;
  const int64_t n_blocks = rows * n / (q8_0 ? 32 : 256);
  emu::launch(unsigned((n_blocks + 7) / 8), 256, 0, [&] {
    if (q8_0) ds4_quantize_q8_0(x.data(), reinterpret_cast<quant::detail::BlockQ8_0Act*>(got.data()), n_blocks);
    else ds4_quantize_q8_k(x.data(), reinterpret_cast<quant::detail::BlockQ8_K*>(got.data()), n_blocks);
  });
  size_t first = 0;
  while (first < bytes && got[first] == want[first]) first++;
  EXPECT_EQ(first, bytes) << (q8_0 ? "Q8_0" : "Q8_K") << ", " << rows << " rows of " << n << ": first differing byte "
                          << first;
}

TEST(EmulatedActQuant, Q8_0AndQ8_KMatchTheCpuByteForByte) {
  std::mt19937 rng(30);
  for (int64_t rows : {1, 3})
    for (int64_t n : {256, 2304}) {
      const auto x = activation_rows(rng, rows, n);
      check(quant::Type::Q8_0, x, rows, n);
      check(quant::Type::Q8_K, x, rows, n);
    }
  check(quant::Type::Q8_0, activation_rows(rng, 3, 96), 3, 96);  // 9 blocks: a part-empty CUDA block
}

}  // namespace
