#pragma once
// KV-format simulations that are part of the DS4 graph, in the shapes the model uses them:
// FP8 E4M3 on the non-RoPE dims of attention KV rows, and the indexer's Hadamard + FP4 step on
// 128-wide indexer rows. The arithmetic is quant/fp_sim (ds4's exact rounding and tie rules).
#include <cstdint>
#include <stdexcept>

#include "engine/quant/fp_sim.hpp"

namespace ds4::model {

inline void fp8_kv_row_inplace(float* x, uint32_t head_dim, uint32_t n_rot) {
  quant::fp8_kv_simulate_row(x, int(head_dim - n_rot));
}

inline void indexer_qat_row_inplace(float* x, uint32_t dim) {
  if (dim != 128) throw std::logic_error("indexer QAT expects 128-wide indexer rows");
  quant::indexer_qat_row(x);
}

}  // namespace ds4::model
