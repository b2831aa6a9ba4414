#pragma once
// Scratch buffers of the device forward: grown on demand, never shrunk, so a steady decode loop
// allocates nothing after its first step.
#include <cstddef>

#include "engine/cuda/device.hpp"

namespace ds4::model::device {

// The first `n` elements of T in `b`, growing it (contents lost) when it is smaller.
template <class T = float>
cuda::DeviceSpan grown(cuda::DeviceBuffer& b, size_t n) {
  if (b.bytes() < n * sizeof(T)) b = cuda::DeviceBuffer(n * sizeof(T));
  return cuda::DeviceSpan(b).sub(0, n * sizeof(T));
}

}  // namespace ds4::model::device
