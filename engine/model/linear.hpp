#pragma once
// Weight x activation products for the forward pass, on top of kernels::matmul. This file
// decides which activation format each weight type consumes (Q8_0 weights: per-32 int8
// activations; routed experts: Q8_K; F16: plain f32) and which kernel runs it: Fast mode takes
// every format's Fast-order kernel (docs/arithmetic.md); Exact mode the exact-order kernels, F16
// through the order-preserving SIMD matvec (engine/kernels/ordered_simd.hpp: the reference's
// serial sum, its bits, in 16-row blocks on the pool). for_rows spreads a batch's row-wise
// steps over the pool (docs/arithmetic.md §threads).
#include <cstdint>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/model/activation_observer.hpp"
#include "engine/model/weights.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::model {

struct Exec {
  kernels::ThreadPool* pool = nullptr;
  bool exact = false;
  quant::Isa isa = quant::Isa::Scalar;     // the kernels: an architecture and the mode's order
  ActivationObserver* observer = nullptr;  // LoadOptions::activation_observer (null: off)
};

// A batch of activation rows quantized to one vec_dot_type.
struct QuantAct {
  quant::Type type = quant::Type::F32;
  std::vector<uint8_t> bytes;
  size_t row_bytes = 0;
  int rows = 0;
  int64_t cols = 0;
  const uint8_t* row(int t) const { return bytes.data() + size_t(t) * row_bytes; }
};

quant::Type vec_dot_type_of(quant::Type weight_type);

// Runs fn(t) for every t in [0, n) on the pool, in chunks of rows worth a thread (each row reads
// or writes about `bytes_per_row`; a batch too small for two chunks runs inline). fn(t) must
// write only row t's outputs: then the results are the same bits at every thread count.
template <class Fn>
void for_rows(const Exec& ex, int n, double bytes_per_row, Fn&& fn) {
  ex.pool->parallel_for(n, kernels::ThreadPool::grain_for_bytes(bytes_per_row), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) fn(int(t));
  });
}

// Quantizes n rows of `cols` floats (row stride `stride` floats) for weights of `weight_type`:
// on the calling thread, or with `ex`, the rows spread over its pool (the same bytes).
void quantize_rows(quant::Type weight_type, const float* x, int n, int64_t cols, QuantAct& out, int64_t stride = -1);
void quantize_rows(const Exec& ex, quant::Type weight_type, const float* x, int n, int64_t cols, QuantAct& out,
                   int64_t stride = -1);

// out[t * w.rows + r] = w_row_r . act_row_t.
void matmul(const Exec& ex, const kernels::WeightView& w, const QuantAct& act, float* out);
// Same with an explicit activation pointer and row stride in bytes (sub-ranges of a QuantAct).
void matmul_raw(const Exec& ex, const kernels::WeightView& w, const void* act, size_t act_row_bytes, int n, float* out);

// Quantize and multiply: out [n][w.ne[1]] = W . x[t] for t < n (x rows of w.ne[0] floats).
void project(const Exec& ex, const Tensor& w, const float* x, int n, float* out, QuantAct& scratch);

}  // namespace ds4::model
