#pragma once
// What the two GEMM test files share (gemm_gpu_test.cpp on model shapes, gemm_launch_gpu_test.cpp
// on shapes small enough for the emulator): each shape of one format against the CPU and the
// matvec, bit for bit, through tools/cuda_check/gemm_compare.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>

#include "tools/cuda_check/gemm_compare.hpp"

namespace ds4::cuda::test {

// Shape i uses seed + i.
inline void expect_gemm_bit_identical(quant::Type type, std::span<const cuda_check::GemmShape> shapes, uint32_t seed) {
  for (const cuda_check::GemmShape& s : shapes) {
    const int64_t cols = cuda_check::shape_cols(type, {s.rows, s.cols, false});
    const auto r = cuda_check::compare_gemm(type, s.rows, cols, s.n, seed++);
    EXPECT_EQ(r.cpu.compared, static_cast<uint64_t>(s.rows) * s.n);
    EXPECT_EQ(r.cpu.mismatched, 0u) << r.cpu.first_mismatch;
    EXPECT_EQ(r.matvec.mismatched, 0u) << r.matvec.first_mismatch;
  }
}

}  // namespace ds4::cuda::test
