// Launches kernels/kv_format.cuh: one block per row, dim rounded up to a warp.
#include "engine/cuda/kv_format.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void kv_format_rows(DeviceSpan x, int32_t rows, int32_t dim, int32_t n_rot, KvFormat fmt, bool round_f16,
                    DeviceSpan dst) {
  const bool fp8 = fmt == KvFormat::Fp8;
  const bool shape_ok =
      fp8 ? (dim > 0 && dim <= 1024 && n_rot >= 0 && n_rot <= dim && (dim - n_rot) % 64 == 0) : dim == 128;
  if (!shape_ok || rows < 0 || x.bytes() < sizeof(float) * size_t(rows) * size_t(dim) ||
      (dst.ptr() != 0 && dst.bytes() < sizeof(uint64_t) * size_t(rows)))
    throw std::invalid_argument("CUDA kv_format_rows: " + std::to_string(rows) + " rows of " + std::to_string(dim) +
                                " (n_rot " + std::to_string(n_rot) + ", " + (fp8 ? "FP8" : "Hadamard + FP4") +
                                ") do not fit the format or the buffers");
  if (rows == 0) return;
  uint64_t xp = x.ptr(), dp = dst.ptr();
  int32_t f = static_cast<int32_t>(fmt), r = round_f16 ? 1 : 0;
  void* args[] = {&xp, &dp, &dim, &n_rot, &f, &r};
  Device::open().launch("ds4_kv_format", static_cast<unsigned>(rows), static_cast<unsigned>((dim + 31) / 32 * 32), 0,
                        args);
}

}  // namespace ds4::cuda
