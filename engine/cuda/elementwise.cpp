// Launches kernels/elementwise.cuh: one thread per element of the output, 256 per block.
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

void add_broadcast(DeviceSpan a, DeviceSpan b, DeviceSpan out, int64_t rows, int64_t n, int64_t d) {
  if (rows < 1 || n < 1 || d < 1)
    throw std::invalid_argument("CUDA add_broadcast: shape " + std::to_string(rows) + " x " + std::to_string(n) +
                                " x " + std::to_string(d));
  const size_t total = sizeof(float) * size_t(rows) * size_t(n) * size_t(d);
  if (a.bytes() < sizeof(float) * size_t(rows) * size_t(d) || b.bytes() < total || out.bytes() < total)
    throw std::invalid_argument("CUDA add_broadcast: buffers of " + std::to_string(a.bytes()) + ", " +
                                std::to_string(b.bytes()) + " and " + std::to_string(out.bytes()) + " bytes for " +
                                std::to_string(total) + " of output");
  uint64_t ap = a.ptr(), bp = b.ptr(), op = out.ptr();
  void* args[] = {&ap, &bp, &op, &rows, &n, &d};
  constexpr unsigned kBlock = 256;
  const int64_t count = rows * n * d;
  Device::open().launch("ds4_add_broadcast", static_cast<unsigned>((count + kBlock - 1) / kBlock), kBlock, 0, args);
}

}  // namespace ds4::cuda
