// Launches the matvec kernels of kernels/matvec.cuh: one warp per weight row, four warps per
// thread block; the kernel for width n has all n running sums in registers.
#include "engine/cuda/matvec.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

DeviceWeight upload_weight(quant::Type type, const void* data, int64_t rows, int64_t cols) {
  if (type != quant::Type::Q8_0 && type != quant::Type::F16)
    throw std::invalid_argument(std::string("CUDA matvec: no device kernel for ") +
                                std::string(quant::type_info(type).name) + " (Q8_0 and F16 only so far)");
  if (rows <= 0 || cols <= 0 || (type == quant::Type::Q8_0 && cols % 32 != 0))
    throw std::invalid_argument("CUDA matvec: bad shape " + std::to_string(rows) + "x" + std::to_string(cols) +
                                " for " + std::string(quant::type_info(type).name));
  const size_t bytes = static_cast<size_t>(quant::row_bytes(type, static_cast<uint64_t>(cols))) * rows;
  DeviceWeight w{type, rows, cols, DeviceBuffer(bytes)};
  w.data.upload(data, bytes);
  return w;
}

void matvec(const DeviceWeight& w, const DeviceBuffer& act, size_t act_row_bytes, int n, DeviceBuffer& out) {
  if (n < 1 || n > kMaxMatvecWidth)
    throw std::invalid_argument("CUDA matvec: width " + std::to_string(n) + " outside 1.." +
                                std::to_string(kMaxMatvecWidth));
  const quant::Type vdt = quant::traits(w.type).vec_dot_type;
  const size_t need = quant::act_row_bytes(vdt, w.cols);
  if (act_row_bytes < need || act.bytes() < act_row_bytes * (n - 1) + need)
    throw std::invalid_argument("CUDA matvec: activation buffer of " + std::to_string(act.bytes()) +
                                " bytes too small for " + std::to_string(n) + " rows of " + std::to_string(need));
  if (out.bytes() < sizeof(float) * static_cast<size_t>(n) * w.rows)
    throw std::invalid_argument("CUDA matvec: output buffer too small");
  const bool q8 = w.type == quant::Type::Q8_0;
  if (!q8 && act_row_bytes % sizeof(float) != 0)
    throw std::invalid_argument("CUDA matvec: F16 activation rows must be whole floats apart");
  const std::string name = std::string(q8 ? "ds4_matvec_q8_0_w" : "ds4_matvec_f16_w") + std::to_string(n);
  uint64_t wp = w.data.ptr(), ap = act.ptr(), op = out.ptr();
  int64_t rows = w.rows, cols = w.cols;
  int64_t stride = q8 ? static_cast<int64_t>(act_row_bytes) : static_cast<int64_t>(act_row_bytes / sizeof(float));
  void* args[] = {&wp, &rows, &cols, &ap, &stride, &op};
  constexpr int kWarpsPerBlock = 4;  // kernels/matvec.cuh
  const auto grid = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  Device::open().launch(name.c_str(), grid, 32 * kWarpsPerBlock, 0, args);
}

}  // namespace ds4::cuda
