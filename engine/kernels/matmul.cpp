// Matrix products over quantized weights, built on quant::dot. Every output element is one dot
// of a full weight row with a full activation row; the pool partitions weight rows only. That is
// what makes results batch- and thread-count-invariant: the value computed for (activation row
// t, weight row r) does not depend on which other rows share the call. The multi-activation
// kernels decode a weight row once for all activation rows; they are bit-identical per output to
// the single-row kernels of their order, so the invariant holds in both orders.
#include "engine/kernels/matmul.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ds4::kernels {

size_t weight_row_bytes(const WeightView& w) {
  return static_cast<size_t>(quant::row_bytes(w.type, static_cast<uint64_t>(w.cols)));
}

WeightView expert_view(quant::Type type, const void* base, int64_t rows, int64_t cols, int64_t n_experts, int64_t e) {
  if (e < 0 || e >= n_experts)
    throw std::out_of_range("expert " + std::to_string(e) + " out of range [0, " + std::to_string(n_experts) + ")");
  const size_t rb = static_cast<size_t>(quant::row_bytes(type, static_cast<uint64_t>(cols)));
  return {type, static_cast<const uint8_t*>(base) + static_cast<size_t>(e) * static_cast<size_t>(rows) * rb, rows,
          cols};
}

void quantize_activations(quant::Type vec_dot_type, const float* x, int n, int64_t cols, std::vector<uint8_t>& out) {
  const size_t arb = quant::act_row_bytes(vec_dot_type, cols);
  out.resize(static_cast<size_t>(n) * arb);
  for (int t = 0; t < n; t++)
    quant::quantize_activation(vec_dot_type, x + static_cast<size_t>(t) * cols, out.data() + t * arb, cols);
}

void matmul(ThreadPool& pool, const WeightView& w, const void* act, size_t act_row_bytes, int n_rows_act, float* out,
            quant::Isa isa) {
  const quant::Traits& tr = quant::traits(w.type);
  if (!tr.has_dot)
    throw std::invalid_argument("matmul: no dot product for weight type " + std::string(quant::type_info(w.type).name));
  const size_t need = quant::act_row_bytes(tr.vec_dot_type, w.cols);
  if (act_row_bytes < need)
    throw std::invalid_argument("matmul: activation rows of " + std::to_string(act_row_bytes) + " bytes, " +
                                std::to_string(need) + " needed for " + std::to_string(w.cols) + " columns");
  const quant::DotFn dot = quant::dot_fn(tr, isa);
  const size_t rb = weight_row_bytes(w);
  const uint8_t* wbase = static_cast<const uint8_t*>(w.data);
  const uint8_t* abase = static_cast<const uint8_t*>(act);
  // The multi-row kernel of the same order gives each output the single-row kernel's bits.
  const quant::DotMultiFn multi = n_rows_act > 1 ? quant::dot_multi_fn(tr, isa) : nullptr;
  auto rows = [&](int64_t r0, int64_t r1) {
    if (multi != nullptr) {  // decode each weight row once for all activation rows
      std::vector<float> tmp(static_cast<size_t>(n_rows_act));
      for (int64_t r = r0; r < r1; r++) {
        multi(wbase + static_cast<size_t>(r) * rb, abase, act_row_bytes, n_rows_act, w.cols, tmp.data());
        for (int t = 0; t < n_rows_act; t++) out[static_cast<size_t>(t) * w.rows + r] = tmp[static_cast<size_t>(t)];
      }
      return;
    }
    for (int64_t r = r0; r < r1; r++) {
      const uint8_t* wrow = wbase + static_cast<size_t>(r) * rb;
      for (int t = 0; t < n_rows_act; t++)
        out[static_cast<size_t>(t) * w.rows + r] = dot(wrow, abase + static_cast<size_t>(t) * act_row_bytes, w.cols);
    }
  };
  // A task gets enough rows to be worth a thread (ThreadPool::kMinTaskBytes); a product too
  // small for two tasks runs inline. The values are the same either way.
  pool.parallel_for(w.rows, ThreadPool::grain_for_bytes(static_cast<double>(rb) * std::max(1, n_rows_act)), rows);
}

void matmul_f32(ThreadPool& pool, const WeightView& w, const float* x, int n_rows_act, float* out, quant::Isa isa) {
  const quant::Type vdt = quant::traits(w.type).vec_dot_type;
  std::vector<uint8_t> act;
  quantize_activations(vdt, x, n_rows_act, w.cols, act);
  matmul(pool, w, act.data(), quant::act_row_bytes(vdt, w.cols), n_rows_act, out, isa);
}

}  // namespace ds4::kernels
