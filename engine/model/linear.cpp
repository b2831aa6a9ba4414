// Weight x activation dispatch; see linear.hpp.
#include "engine/model/linear.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/kernels/ordered_simd.hpp"

namespace ds4::model {
namespace {

// F16 weights in Exact mode: 16-row blocks of the order-preserving SIMD matvec on the pool
// (bit-identical to the scalar reference-order kernel, and faster than one serial chain per row),
// all activation rows of a block at once so each weight tile is converted once per kMultiRows
// rows (bit-identical to one row at a time). Fast mode takes the Fast-order F16 kernels through
// kernels::matmul like every other format.
void matmul_f16_ordered(const Exec& ex, const kernels::WeightView& w, const uint8_t* act, size_t act_row_bytes, int n,
                        float* out) {
  const auto* W = static_cast<const uint16_t*>(w.data);
  const int64_t blocks = (w.rows + 15) / 16;
  const int64_t grain = kernels::ThreadPool::grain_for_bytes(32.0 * double(w.cols) * double(n));  // 16 rows x 2 B
  if (act_row_bytes % sizeof(float) != 0)
    throw std::logic_error("model: F32 activation rows of " + std::to_string(act_row_bytes) + " bytes");
  const auto* x = reinterpret_cast<const float*>(act);
  ex.pool->parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    const int64_t r0 = b0 * 16, r1 = std::min(w.rows, b1 * 16);
    if (n == 1) return kernels::ordered::f16_matvec_rows(W, w.cols, r0, r1, x, out + r0);
    kernels::ordered::f16_matvec_rows_multi(W, w.cols, r0, r1, x, act_row_bytes / sizeof(float), n, out + r0,
                                            size_t(w.rows));
  });
}

}  // namespace

quant::Type vec_dot_type_of(quant::Type weight_type) { return quant::traits(weight_type).vec_dot_type; }

namespace {

// Shapes `out` for n rows of `cols` values quantized for `weight_type` (growing its bytes).
void shape_rows(quant::Type weight_type, int n, int64_t cols, QuantAct& out) {
  out.type = vec_dot_type_of(weight_type);
  out.rows = n;
  out.cols = cols;
  out.row_bytes = quant::act_row_bytes(out.type, cols);
  const size_t need = out.row_bytes * size_t(n);
  if (out.bytes.size() < need) out.bytes.resize(need);
}

// Row t of x (rows `stride` floats apart; negative: `out.cols`) into row t of `out`.
void quantize_row(const float* x, int t, int64_t stride, QuantAct& out) {
  const size_t step = size_t(stride < 0 ? out.cols : stride);
  quant::quantize_activation(out.type, x + size_t(t) * step, out.bytes.data() + size_t(t) * out.row_bytes, out.cols);
}

}  // namespace

void quantize_rows(quant::Type weight_type, const float* x, int n, int64_t cols, QuantAct& out, int64_t stride) {
  shape_rows(weight_type, n, cols, out);
  for (int t = 0; t < n; t++) quantize_row(x, t, stride, out);
}

void quantize_rows(const Exec& ex, quant::Type weight_type, const float* x, int n, int64_t cols, QuantAct& out,
                   int64_t stride) {
  shape_rows(weight_type, n, cols, out);
  for_rows(ex, n, double(cols) * sizeof(float), [&](int t) { quantize_row(x, t, stride, out); });
}

void matmul_raw(const Exec& ex, const kernels::WeightView& w, const void* act, size_t act_row_bytes, int n,
                float* out) {
  if (ex.exact && w.type == quant::Type::F16 && kernels::ordered::available())
    return matmul_f16_ordered(ex, w, static_cast<const uint8_t*>(act), act_row_bytes, n, out);
  kernels::matmul(*ex.pool, w, act, act_row_bytes, n, out, ex.isa);
}

void matmul(const Exec& ex, const kernels::WeightView& w, const QuantAct& act, float* out) {
  if (act.cols != w.cols)
    throw std::logic_error("model: activation width " + std::to_string(act.cols) + " does not match weight width " +
                           std::to_string(w.cols));
  matmul_raw(ex, w, act.bytes.data(), act.row_bytes, act.rows, out);
}

void project(const Exec& ex, const Tensor& w, const float* x, int n, float* out, QuantAct& scratch) {
  if (ex.observer)
    for (int t = 0; t < n; t++) ex.observer->observe(w.name, -1, x + size_t(t) * w.ne[0], int64_t(w.ne[0]));
  quantize_rows(ex, w.type, x, n, int64_t(w.ne[0]), scratch);
  matmul(ex, w.view(), scratch, out);
}

}  // namespace ds4::model
