// Launches kernels/elementwise.cuh: one thread per element, 256 per block.
#include "engine/cuda/elementwise.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void elementwise(ElementwiseOp op, DeviceSpan in, DeviceSpan out, int64_t n) {
  if (n < 0 || in.bytes() < sizeof(float) * static_cast<size_t>(n) ||
      out.bytes() < sizeof(float) * static_cast<size_t>(n))
    throw std::invalid_argument("CUDA elementwise: " + std::to_string(n) + " elements do not fit the buffers (" +
                                std::to_string(in.bytes()) + " and " + std::to_string(out.bytes()) + " bytes)");
  if (n == 0) return;
  auto code = static_cast<int32_t>(op);
  uint64_t ip = in.ptr(), op_ = out.ptr();
  void* args[] = {&code, &ip, &op_, &n};
  constexpr unsigned kBlock = 256;
  Device::open().launch("ds4_elementwise", static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, args);
}

}  // namespace ds4::cuda
