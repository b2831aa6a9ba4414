#pragma once
// What the device forward's tests share: the Fast ds4-tiny model, and from the kernel tests the
// skip without a usable GPU and the bit-for-bit comparison.
#include <gtest/gtest.h>

#include <memory>

#include "engine/cuda/device.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/model/tiny_cases.hpp"

// SKIP_WITHOUT_GPU and first_difference are the kernel tests' (gpu_test_support.hpp).
namespace ds4::test::device {

inline std::shared_ptr<Model> fast_tiny() {
  static const std::shared_ptr<Model> m = [] {
    LoadOptions o;
    o.arithmetic = Arithmetic::Fast;
    o.threads = 1;
    return Model::load(tiny_vectors_dir() / "model.gguf", o);
  }();
  return m;
}

using ds4::cuda::test::first_difference;

}  // namespace ds4::test::device
