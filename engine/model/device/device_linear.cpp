// See device_linear.hpp.
#include "engine/model/device/device_linear.hpp"

#include <stdexcept>

#include "engine/cuda/act_quant.hpp"
#include "engine/cuda/gemm.hpp"

namespace ds4::model::device {

void project(const cuda::DeviceWeight& w, cuda::DeviceSpan x, int T, cuda::DeviceSpan out, cuda::DeviceBuffer& act) {
  if (T <= 0) return;
  const size_t cols = size_t(w.cols), in_row = cols * sizeof(float), out_row = size_t(w.rows) * sizeof(float);
  if (x.bytes() < in_row * size_t(T) || out.bytes() < out_row * size_t(T))
    throw std::invalid_argument("device project: buffers too small for " + std::to_string(T) + " rows");
  const quant::Type vdt = quant::traits(w.type).vec_dot_type;
  cuda::DeviceSpan a = x;
  size_t a_row = in_row;
  if (vdt != quant::Type::F32) {
    a_row = quant::act_row_bytes(vdt, int64_t(cols));
    if (act.bytes() < a_row * size_t(T)) act = cuda::DeviceBuffer(a_row * size_t(T));
    a = cuda::DeviceSpan(act).sub(0, a_row * size_t(T));
    cuda::quantize_activation(vdt, x.sub(0, in_row * size_t(T)), T, int64_t(cols), a);
  }
  cuda::gemm(w, a, a_row, T, out.sub(0, out_row * size_t(T)));
}

}  // namespace ds4::model::device
