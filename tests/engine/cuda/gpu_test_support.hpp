#pragma once
// What the stage GPU tests share: the skip without a usable device (saying why), seeded normal
// inputs, and the bit-for-bit comparison that names the first differing element.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"

#define SKIP_WITHOUT_GPU() \
  if (!ds4::cuda::probe().usable) \
  GTEST_SKIP() << "no usable CUDA device (" << ds4::cuda::probe().why_not << "): GPU comparison not run"

namespace ds4::cuda::test {

// True when the device is the CUDA-thread emulator (cuda_emulated_gpu_tests): one fiber per CUDA
// thread, so the tests leave out their largest, model-sized shapes there.
inline bool on_emulator() { return probe().name == "CUDA-thread emulator"; }

inline std::vector<float> randn(std::mt19937& rng, size_t n, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline DeviceBuffer upload(const std::vector<float>& v) {
  DeviceBuffer b(v.empty() ? sizeof(float) : v.size() * sizeof(float));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(float));
  return b;
}

inline std::vector<float> download(const DeviceBuffer& b, size_t n) {
  std::vector<float> v(n);
  if (n) b.download(v.data(), n * sizeof(float));
  return v;
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

}  // namespace ds4::cuda::test
