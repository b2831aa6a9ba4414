// The device's Fast-order scalar functions (kernels/elementwise.cuh) against the CPU's
// engine/quant/fast_math.hpp, bit for bit, over a dense sweep of binary32 inputs and the special
// values. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/elementwise.hpp"
#include "engine/quant/fast_math.hpp"

namespace {
namespace fast = ds4::quant::fast;
using ds4::cuda::ElementwiseOp;

#define SKIP_WITHOUT_GPU() \
  if (!ds4::cuda::probe().usable) \
  GTEST_SKIP() << "no usable CUDA device (" << ds4::cuda::probe().why_not << "): GPU comparison not run"

float host_op(ElementwiseOp op, float x) {
  switch (op) {
    case ElementwiseOp::Exp: return fast::exp(x);
    case ElementwiseOp::Sigmoid: return fast::sigmoid(x);
    case ElementwiseOp::SigmoidStable: return fast::sigmoid_stable(x);
    case ElementwiseOp::Silu: return fast::silu(x);
    case ElementwiseOp::Softplus: return fast::softplus(x);
  }
  return 0.0f;
}

TEST(ElementwiseGpu, FastMathHasTheCpuBits) {
  SKIP_WITHOUT_GPU();
  std::vector<float> in;
  for (int i = -2'000'000; i <= 2'000'000; i++) in.push_back(float(i) * 6.0e-5f);  // [-120, 120]
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f, 88.7228394f, -103.97f, 20.0f, -20.0f})
    in.push_back(x);
  const size_t n = in.size();
  ds4::cuda::DeviceBuffer din(n * sizeof(float)), dout(n * sizeof(float));
  din.upload(in.data(), n * sizeof(float));
  std::vector<float> got(n);
  for (ElementwiseOp op : {ElementwiseOp::Exp, ElementwiseOp::Sigmoid, ElementwiseOp::SigmoidStable,
                           ElementwiseOp::Silu, ElementwiseOp::Softplus}) {
    ds4::cuda::elementwise(op, din, dout, int64_t(n));
    dout.download(got.data(), n * sizeof(float));
    size_t mismatched = 0, first = n;
    for (size_t i = 0; i < n; i++) {
      const float want = host_op(op, in[i]);
      if (std::memcmp(&want, &got[i], sizeof(float)) != 0 && !(std::isnan(want) && std::isnan(got[i]))) {
        if (first == n) first = i;
        mismatched++;
      }
    }
    EXPECT_EQ(mismatched, 0u) << "op " << int(op) << ": first at x = " << (first < n ? in[first] : 0.0f);
  }
}

TEST(ElementwiseGpu, RejectsBuffersTooSmall) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer a(16), b(8);
  EXPECT_THROW(ds4::cuda::elementwise(ElementwiseOp::Exp, a, b, 4), std::invalid_argument);
}

}  // namespace
