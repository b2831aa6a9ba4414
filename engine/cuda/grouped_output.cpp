// Launches ds4_grouped_output_q8_0_w<T> (kernels/grouped_output.cuh): four warps a block, a row
// each, ceil(rank / 4) blocks per group, all T tokens in one pass over each weight row.
#include "engine/cuda/grouped_output.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void grouped_output(const DeviceWeight& output_a, int n_group, DeviceSpan act, size_t act_row_bytes, int T,
                    DeviceSpan low) {
  if (output_a.type != quant::Type::Q8_0)
    throw std::invalid_argument("CUDA grouped output: output_a must be Q8_0, not " +
                                std::string(quant::type_info(output_a.type).name));
  if (T < 1 || T > kMaxMatvecWidth)
    throw std::invalid_argument("CUDA grouped output: " + std::to_string(T) + " tokens, outside 1.." +
                                std::to_string(kMaxMatvecWidth));
  if (n_group < 1 || output_a.rows % n_group != 0)
    throw std::invalid_argument("CUDA grouped output: " + std::to_string(output_a.rows) + " rows in " +
                                std::to_string(n_group) + " groups");
  int64_t rank = output_a.rows / n_group, gd = output_a.cols;
  const size_t row = quant::act_row_bytes(quant::Type::Q8_0, gd * n_group);
  if (act_row_bytes < row || act_row_bytes % 4 != 0 || act.bytes() < act_row_bytes * size_t(T - 1) + row)
    throw std::invalid_argument("CUDA grouped output: activation of " + std::to_string(act.bytes()) +
                                " bytes too small for " + std::to_string(T) + " rows of " + std::to_string(row));
  if (low.bytes() < sizeof(float) * size_t(T) * size_t(output_a.rows))
    throw std::invalid_argument("CUDA grouped output: output buffer too small");
  uint64_t wp = output_a.data.ptr(), ap = act.ptr(), lp = low.ptr();
  int32_t g = n_group;
  int64_t stride = int64_t(act_row_bytes);
  void* args[] = {&wp, &g, &rank, &gd, &ap, &stride, &lp};
  const std::string name = "ds4_grouped_output_q8_0_w" + std::to_string(T);
  Device::open().launch(name.c_str(), unsigned((rank + 3) / 4 * n_group), 128, 0, args);
}

}  // namespace ds4::cuda
