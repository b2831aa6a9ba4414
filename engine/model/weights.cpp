// The Tensor views of weights.hpp: row ranges and expert slices of a bound tensor. Apart from
// the loader so that a stage and its tests can use a Tensor without the GGUF reader (the CUDA
// check configuration compiles moe.cpp with this and no loader).
#include "engine/model/weights.hpp"

#include <stdexcept>

#include "engine/quant/quant.hpp"

namespace ds4 {

kernels::WeightView model::Tensor::rows(int64_t row0, int64_t n) const {
  const uint64_t rb = quant::row_bytes(type, ne[0]);
  if (row0 < 0 || n < 0 || uint64_t(row0 + n) > ne[1] * (ndim > 2 ? ne[2] : 1))
    throw std::out_of_range("rows out of range in tensor " + name);
  return {type, data + uint64_t(row0) * rb, n, int64_t(ne[0])};
}

kernels::WeightView model::Tensor::expert(int64_t e) const {
  if (ndim != 3 || e < 0 || uint64_t(e) >= ne[2])
    throw std::out_of_range("expert index out of range in tensor " + name);
  const uint64_t rb = quant::row_bytes(type, ne[0]);
  return {type, data + uint64_t(e) * ne[1] * rb, int64_t(ne[1]), int64_t(ne[0])};
}

}  // namespace ds4
