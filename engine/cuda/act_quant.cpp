// Launches kernels/act_quant.cuh: one warp per quantization block, 256 threads a CUDA block.
#include "engine/cuda/act_quant.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void quantize_activation(quant::Type type, DeviceSpan x, int64_t rows, int64_t n, DeviceSpan out) {
  const bool q8_0 = type == quant::Type::Q8_0;
  if (!q8_0 && type != quant::Type::Q8_K)
    throw std::invalid_argument("CUDA quantize_activation: type " + std::to_string(static_cast<int>(type)) +
                                " is not Q8_0 or Q8_K");
  const int64_t block = q8_0 ? 32 : 256;
  if (rows < 0 || n <= 0 || n % block != 0)
    throw std::invalid_argument("CUDA quantize_activation: " + std::to_string(rows) + " rows of " + std::to_string(n) +
                                " (not whole blocks of " + std::to_string(block) + ")");
  int64_t n_blocks = rows * (n / block);
  if (x.bytes() < sizeof(float) * static_cast<size_t>(rows * n) ||
      out.bytes() < static_cast<size_t>(rows) * quant::act_row_bytes(type, n))
    throw std::invalid_argument("CUDA quantize_activation: " + std::to_string(rows) + " rows of " + std::to_string(n) +
                                " do not fit the buffers");
  constexpr int64_t kWarps = 8;
  if (n_blocks == 0) return;
  if ((n_blocks + kWarps - 1) / kWarps > (int64_t(1) << 31) - 1)
    throw std::invalid_argument("CUDA quantize_activation: too many blocks");
  uint64_t xp = x.ptr(), op = out.ptr();
  void* args[] = {&xp, &op, &n_blocks};
  Device::open().launch(q8_0 ? "ds4_quantize_q8_0" : "ds4_quantize_q8_k",
                        static_cast<unsigned>((n_blocks + kWarps - 1) / kWarps), 32 * kWarps, 0, args);
}

}  // namespace ds4::cuda
