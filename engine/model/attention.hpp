#pragma once
// Multi-head attention of one query token over the layer's visible KV rows: the raw sliding
// window (oldest to newest) and then the compressed rows (all of them on ratio-128 layers, the
// indexer's selection on ratio-4 layers). One 512-d row is both key and value for every head.
// Each head has a learned sink logit that joins the softmax denominator only:
//   out_h = sum_r e^{s_r - m} k_r / (e^{sink_h - m} + sum_r e^{s_r - m}),  s_r = <q_h, k_r>/sqrt(d).
#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/model_config.hpp"

namespace ds4::model {

// allowed: nullptr (all compressed rows visible) or one byte per compressed row. exact: ds4's
// order (attention.cpp); otherwise attend_fast with isa's Fast float dots.
void attend(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
            bool exact, quant::Isa isa, kernels::ThreadPool& pool, float* out_heads);

// The Fast order of docs/arithmetic.md §attention (attention_fast.cpp): the same bits for every
// thread count and every isa of Order::Fast.
void attend_fast(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
                 quant::Isa isa, kernels::ThreadPool& pool, float* out_heads);

// Grouped output LoRA-A: the heads are split into n_out_group groups of consecutive heads and
// group g is multiplied by rows [g*rank, (g+1)*rank) of output_a, giving low[t][g*rank + i].
// heads: T x (n_head*head_dim); low: T x (n_out_group*rank). Each group's activation is
// quantized on its own (per-32 blocks never straddle groups, so one pass over the row does it).
void grouped_output(const Exec& ex, const ModelConfig& cfg, const Tensor& output_a, const float* heads, int T,
                    float* low, QuantAct& qa, std::vector<float>& tmp);

}  // namespace ds4::model
