// Launches the matvec kernels of kernels/matvec.cuh and kernels/matvec_blocks.cuh: one warp per
// weight row, four warps per thread block; the kernel for width n has all n running sums in
// registers. Kernel names are ds4_matvec_<format>_w<n>.
#include "engine/cuda/matvec.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {
namespace {

// The kernel name prefix of a format, or nullptr where none exists.
const char* kernel_prefix(quant::Type type) {
  switch (type) {
    case quant::Type::F32: return "ds4_matvec_f32_w";
    case quant::Type::F16: return "ds4_matvec_f16_w";
    case quant::Type::BF16: return "ds4_matvec_bf16_w";
    case quant::Type::Q8_0: return "ds4_matvec_q8_0_w";
    case quant::Type::MXFP4: return "ds4_matvec_mxfp4_w";
    case quant::Type::Q2_K: return "ds4_matvec_q2_k_w";
    case quant::Type::Q4_K: return "ds4_matvec_q4_k_w";
    case quant::Type::IQ2_XXS: return "ds4_matvec_iq2_xxs_w";
    default: return nullptr;
  }
}

// Float formats take f32 activations, their row stride counted in floats.
bool float_format(quant::Type type) {
  return type == quant::Type::F32 || type == quant::Type::F16 || type == quant::Type::BF16;
}

// The bytes of a rows x cols weight of `type`; throws for a type without a kernel or a bad shape.
size_t weight_bytes(quant::Type type, int64_t rows, int64_t cols) {
  if (kernel_prefix(type) == nullptr)
    throw std::invalid_argument(std::string("CUDA matvec: no device kernel for ") +
                                std::string(quant::type_info(type).name));
  const int64_t block = quant::type_info(type).block_elems;
  if (rows <= 0 || cols <= 0 || cols % block != 0)
    throw std::invalid_argument("CUDA matvec: bad shape " + std::to_string(rows) + "x" + std::to_string(cols) +
                                " for " + std::string(quant::type_info(type).name));
  return static_cast<size_t>(quant::row_bytes(type, static_cast<uint64_t>(cols))) * rows;
}

}  // namespace

DeviceWeight upload_weight(quant::Type type, const void* data, int64_t rows, int64_t cols) {
  const size_t bytes = weight_bytes(type, rows, cols);
  DeviceWeight w{type, rows, cols, {}, DeviceBuffer(bytes)};
  w.owned.upload(data, bytes);
  w.data = w.owned;
  return w;
}

DeviceWeight weight_over(quant::Type type, DeviceSpan data, int64_t rows, int64_t cols) {
  const size_t bytes = weight_bytes(type, rows, cols);
  if (data.bytes() != bytes)
    throw std::invalid_argument("CUDA matvec: " + std::to_string(data.bytes()) + " bytes are not a " +
                                std::to_string(rows) + "x" + std::to_string(cols) + " " +
                                std::string(quant::type_info(type).name) + " weight (" + std::to_string(bytes) + ")");
  return DeviceWeight{type, rows, cols, data, {}};
}

DeviceWeight map_weight(quant::Type type, const HostRegistration& reg, const void* data, int64_t rows, int64_t cols) {
  const size_t bytes = weight_bytes(type, rows, cols);
  const auto* first = static_cast<const unsigned char*>(data);
  reg.device_address(first + bytes - 1);  // throws when the last byte is outside
  return DeviceWeight{type, rows, cols, {reg.device_address(first), bytes}, {}};
}

void matvec(const DeviceWeight& w, DeviceSpan act, size_t act_row_bytes, int n, DeviceSpan out) {
  if (n < 1 || n > kMaxMatvecWidth)
    throw std::invalid_argument("CUDA matvec: width " + std::to_string(n) + " outside 1.." +
                                std::to_string(kMaxMatvecWidth));
  const char* prefix = kernel_prefix(w.type);
  if (prefix == nullptr) throw std::invalid_argument("CUDA matvec: no device kernel for this weight format");
  const quant::Type vdt = quant::traits(w.type).vec_dot_type;
  const size_t need = quant::act_row_bytes(vdt, w.cols);
  if (act_row_bytes < need || act.bytes() < act_row_bytes * (n - 1) + need)
    throw std::invalid_argument("CUDA matvec: activation buffer of " + std::to_string(act.bytes()) +
                                " bytes too small for " + std::to_string(n) + " rows of " + std::to_string(need));
  if (out.bytes() < sizeof(float) * static_cast<size_t>(n) * w.rows)
    throw std::invalid_argument("CUDA matvec: output buffer too small");
  // Every activation block starts with an f32 (quantized) or is one (float): rows 4-byte aligned.
  if (act_row_bytes % sizeof(float) != 0)
    throw std::invalid_argument("CUDA matvec: activation rows must be a multiple of 4 bytes apart");
  const bool fl = float_format(w.type);
  const std::string name = prefix + std::to_string(n);
  uint64_t wp = w.data.ptr(), ap = act.ptr(), op = out.ptr();
  int64_t rows = w.rows, cols = w.cols;
  int64_t stride = fl ? static_cast<int64_t>(act_row_bytes / sizeof(float)) : static_cast<int64_t>(act_row_bytes);
  void* args[] = {&wp, &rows, &cols, &ap, &stride, &op};
  constexpr int kWarpsPerBlock = 4;  // kernels/matvec.cuh
  const auto grid = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  Device::open().launch(name.c_str(), grid, 32 * kWarpsPerBlock, 0, args);
}

}  // namespace ds4::cuda
