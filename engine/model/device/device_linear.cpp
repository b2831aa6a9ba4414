// See device_linear.hpp.
#include "engine/model/device/device_linear.hpp"

#include <stdexcept>

#include "engine/cuda/act_quant.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/model/device/device_buffers.hpp"

namespace ds4::model::device {

cuda::DeviceSpan activation_rows(quant::Type weight_type, cuda::DeviceSpan x, int n, int64_t cols,
                                 cuda::DeviceBuffer& buf, size_t& row_bytes) {
  const quant::Type vdt = quant::traits(weight_type).vec_dot_type;
  if (vdt == quant::Type::F32) {
    row_bytes = size_t(cols) * sizeof(float);
    return x;
  }
  row_bytes = quant::act_row_bytes(vdt, cols);
  const cuda::DeviceSpan a = grown<uint8_t>(buf, row_bytes * size_t(n));
  cuda::quantize_activation(vdt, x.sub(0, size_t(cols) * sizeof(float) * size_t(n)), n, cols, a);
  return a;
}

void project(const cuda::DeviceWeight& w, cuda::DeviceSpan x, int T, cuda::DeviceSpan out, cuda::DeviceBuffer& act) {
  if (T <= 0) return;
  const size_t in_row = size_t(w.cols) * sizeof(float), out_row = size_t(w.rows) * sizeof(float);
  if (x.bytes() < in_row * size_t(T) || out.bytes() < out_row * size_t(T))
    throw std::invalid_argument("device project: buffers too small for " + std::to_string(T) + " rows");
  size_t a_row = 0;
  const cuda::DeviceSpan a = activation_rows(w.type, x, T, w.cols, act, a_row);
  cuda::gemm(w, a, a_row, T, out.sub(0, out_row * size_t(T)));
}

}  // namespace ds4::model::device
