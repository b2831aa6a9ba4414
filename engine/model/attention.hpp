#pragma once
// Multi-head attention of one query token over the layer's visible KV rows: the raw sliding
// window (oldest to newest) and then the compressed rows (all of them on ratio-128 layers, the
// indexer's selection on ratio-4 layers). One 512-d row is both key and value for every head.
// Each head has a learned sink logit that joins the softmax denominator only:
//   out_h = sum_r e^{s_r - m} k_r / (e^{sink_h - m} + sum_r e^{s_r - m}),  s_r = <q_h, k_r>/sqrt(d).
#include <cstdint>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/kv_state.hpp"

namespace ds4::model {

// allowed: nullptr (all compressed rows visible) or one byte per compressed row.
void attend(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
            bool exact, kernels::ThreadPool& pool, float* out_heads);

}  // namespace ds4::model
