// Launches kernels/rope.cuh: one thread per rotated pair, 256 per block.
#include "engine/cuda/rope.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void rope(DeviceSpan x, DeviceSpan cs, int64_t rows, int32_t n_head, int32_t head_dim, int32_t n_rot) {
  const auto bytes = [](int64_t k) { return sizeof(float) * static_cast<size_t>(k); };
  if (rows < 0 || n_head <= 0 || n_rot < 0 || (n_rot & 1) || n_rot > head_dim ||
      x.bytes() < bytes(rows * n_head * head_dim) || cs.bytes() < bytes(rows * n_rot))
    throw std::invalid_argument("CUDA rope: " + std::to_string(rows) + " rows of " + std::to_string(n_head) + " x " +
                                std::to_string(head_dim) + " (n_rot " + std::to_string(n_rot) +
                                ") do not fit the buffers");
  const int64_t pairs = rows * n_head * (n_rot / 2);
  constexpr unsigned kBlock = 256;
  if (pairs == 0) return;
  if ((pairs + kBlock - 1) / kBlock > (int64_t(1) << 31) - 1) throw std::invalid_argument("CUDA rope: too many rows");
  uint64_t xp = x.ptr(), cp = cs.ptr();
  void* args[] = {&xp, &cp, &rows, &n_head, &head_dim, &n_rot};
  Device::open().launch("ds4_rope", static_cast<unsigned>((pairs + kBlock - 1) / kBlock), kBlock, 0, args);
}

}  // namespace ds4::cuda
