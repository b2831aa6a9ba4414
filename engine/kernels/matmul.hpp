#pragma once
// Batch-invariant matrix-vector / small-batch matrix products over quantized weights.
//
// Invariant the model relies on: out[t][r] is exactly quant::dot(type, weight row r, activation
// row t, cols, isa) -- one dot call per output element, never a split or merged reduction -- so
// the result for a given activation row is bit-identical whether the call carries 1 or N
// activation rows and whatever the thread count. Work is partitioned over weight rows; each
// task walks its rows for all activation rows so a weight row is read once per call.
// The Fast order each dot will follow on every ISA and the GPU (today the dots keep the
// reference order): docs/arithmetic.md §quantized-dot, §matrix-matrix, §status.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::kernels {

// A 2D weight: `rows` rows of `cols` elements, row-major, each row quant::row_bytes(type, cols).
struct WeightView {
  quant::Type type;
  const void* data;
  int64_t rows, cols;
};

// Bytes of one weight row.
size_t weight_row_bytes(const WeightView& w);

// Expert e of a 3D expert tensor [cols, rows, n_experts] (expert-major): the view starting at
// byte e * rows * row_bytes. Throws std::out_of_range if e >= n_experts.
WeightView expert_view(quant::Type type, const void* base, int64_t rows, int64_t cols, int64_t n_experts, int64_t e);

// Quantize n activation rows of `cols` floats (x is [n][cols]) into `out`, resized to
// n * quant::act_row_bytes(vec_dot_type, cols); row t starts at t * act_row_bytes.
void quantize_activations(quant::Type vec_dot_type, const float* x, int n, int64_t cols, std::vector<uint8_t>& out);

// out[t * w.rows + r] = dot(w row r, activation row t) for t < n_rows_act, r < w.rows.
// `act` holds n_rows_act rows in traits(w.type).vec_dot_type layout, act_row_bytes apart.
void matmul(ThreadPool& pool, const WeightView& w, const void* act, size_t act_row_bytes, int n_rows_act, float* out,
            quant::Isa isa);

// Convenience: quantizes x ([n_rows_act][w.cols] floats) to the weight's vec_dot_type, then matmul.
void matmul_f32(ThreadPool& pool, const WeightView& w, const float* x, int n_rows_act, float* out, quant::Isa isa);

}  // namespace ds4::kernels
