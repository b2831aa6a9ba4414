// Launches kernels/rms_norm.cuh: one block of 256 threads per row (threads 0..7 sum the slices).
#include "engine/cuda/rms_norm.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void rms_norm(DeviceSpan x, DeviceSpan w, DeviceSpan out, int64_t rows, int64_t n, float eps) {
  const auto bytes = [](int64_t k) { return sizeof(float) * static_cast<size_t>(k); };
  if (rows < 0 || n <= 0 || rows > (int64_t(1) << 31) - 1 || x.bytes() < bytes(rows * n) ||
      out.bytes() < bytes(rows * n) || (w.ptr() != 0 && w.bytes() < bytes(n)))
    throw std::invalid_argument("CUDA rms_norm: " + std::to_string(rows) + " rows of " + std::to_string(n) +
                                " do not fit the buffers");
  if (rows == 0) return;
  uint64_t xp = x.ptr(), wp = w.ptr(), op = out.ptr();
  void* args[] = {&xp, &wp, &op, &n, &eps};
  Device::open().launch("ds4_rms_norm", static_cast<unsigned>(rows), 256, 0, args);
}

}  // namespace ds4::cuda
