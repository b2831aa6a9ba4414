// The device's activation quantizers through their launcher (engine/cuda/act_quant.cpp) against
// the CPU's quantize_activation, byte for byte: Q8_0 and Q8_K at DS4's widths (4096, 2048) and
// odd block counts, 1..8 and 64 rows, with ties to even, zero blocks and equal |x| of both
// signs. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/act_quant.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/hc_cases.hpp"

namespace {
using namespace ds4::cuda::test;
namespace quant = ds4::quant;

TEST(ActQuantGpu, Q8_0AndQ8_KMatchTheCpuByteForByte) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  for (int64_t rows : {1, 3, 8, 64})
    for (int64_t n : {4096, 2048, 2304, 96})
      for (quant::Type type : {quant::Type::Q8_0, quant::Type::Q8_K}) {
        if (type == quant::Type::Q8_K && n % 256) continue;
        const auto x = activation_rows(rng, rows, n);
        const size_t row_bytes = quant::act_row_bytes(type, n), bytes = size_t(rows) * row_bytes;
        std::vector<uint8_t> want(bytes), got(bytes);
        for (int64_t r = 0; r < rows; r++)
          quant::quantize_activation(type, x.data() + r * n, want.data() + size_t(r) * row_bytes, n);
        auto dx = upload(x);
        ds4::cuda::DeviceBuffer out(bytes);
        ds4::cuda::quantize_activation(type, dx, rows, n, out);
        out.download(got.data(), bytes);
        size_t first = 0;
        while (first < bytes && got[first] == want[first]) first++;
        EXPECT_EQ(first, bytes) << (type == quant::Type::Q8_0 ? "Q8_0" : "Q8_K") << ", " << rows << " rows of " << n
                                << ": first differing byte " << first;
      }
}

TEST(ActQuantGpu, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer x(4096 * sizeof(float)), out(64);
  EXPECT_THROW(ds4::cuda::quantize_activation(quant::Type::F32, x, 1, 256, out), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::quantize_activation(quant::Type::Q8_K, x, 1, 96, out), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::quantize_activation(quant::Type::Q8_0, x, 1, 256, out), std::invalid_argument);
}

}  // namespace
