#pragma once
// What the device forward's tests share: the skip without a usable GPU (saying why), the Fast
// ds4-tiny model, and the bit-for-bit comparison that names the first differing element.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"

#define SKIP_WITHOUT_GPU() \
  if (!ds4::cuda::probe().usable) \
  GTEST_SKIP() << "no usable CUDA device (" << ds4::cuda::probe().why_not << "): GPU comparison not run"

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

// "" when got and want have the same bits, else where and how they first differ.
inline std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " differ; first at " + std::to_string(first) +
         ": GPU " + std::to_string(got[first]) + ", CPU " + std::to_string(want[first]);
}

}  // namespace ds4::test::device
