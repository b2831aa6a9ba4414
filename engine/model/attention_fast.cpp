// Sink attention in the Fast order (docs/arithmetic.md §attention): the same function as
// attention.cpp's ds4 loop, in an order a GPU follows at full speed and whose sums do not depend
// on how heads or rows are split. Scores are the Fast float dots of the kernels (x86, Arm and the
// GPU give the same bits); the maximum is global per head; the visible rows (raw window first,
// then the allowed compressed rows) are dealt to 8 slices by position mod 8, each slice summing
// its weights and weighted rows in row order, and the slices meet in the fixed pairwise tree.
// Only IEEE multiplies, adds and one divide per element: no FMA, so every compiler's vector code
// of these loops has the scalar loops' bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/model/attention.hpp"
#include "engine/quant/fast_math.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::model {

void attend_fast(const LayerState& st, const float* q, uint32_t n_head, const float* sinks, const uint8_t* allowed,
                 quant::Isa isa, kernels::ThreadPool& pool, float* out_heads) {
  constexpr int kS = quant::fast::kSlices;
  const uint32_t d = st.head_dim;
  const uint32_t n_comp = st.ratio != 0 ? st.comp.n : 0;
  const float kq_scale = 1.0f / std::sqrt(float(d));
  const quant::DotFn dot = quant::dot_fn(quant::traits(quant::Type::F32), isa);
  thread_local std::vector<const float*> rows;
  thread_local std::vector<float> S;
  rows.clear();
  for (uint32_t r = 0; r < st.n_visible_raw(); r++) rows.push_back(st.visible_raw_row(r));
  for (uint32_t r = 0; r < n_comp; r++)
    if (!allowed || allowed[r]) rows.push_back(st.comp.row(r));
  const uint32_t n = uint32_t(rows.size());
  S.resize(size_t(n) * n_head);
  float* Sp = S.data();
  const float* const* rp = rows.data();
  // Pass 1: s[r][h] = fl(dot(q_h, k_r) * scale), rows in parallel.
  pool.parallel_for(n, kernels::ThreadPool::grain_for_bytes(double(d) * n_head * sizeof(float)),
                    [&](int64_t r0, int64_t r1) {
                      for (int64_t r = r0; r < r1; r++)
                        for (uint32_t h = 0; h < n_head; h++)
                          Sp[size_t(r) * n_head + h] = dot(rp[r], q + size_t(h) * d, d) * kq_scale;
                    });
  // Pass 2: per head, e = exp(s - m) into the row's slice; the tree; the sink; one divide.
  pool.parallel_for(n_head, kernels::ThreadPool::grain_for_bytes(double(n) * d * sizeof(float)),
                    [&](int64_t h0, int64_t h1) {
                      thread_local std::vector<float> o;
                      o.resize(size_t(kS) * d);
                      for (int64_t h = h0; h < h1; h++) {
                        float mx = sinks[h];
                        for (uint32_t r = 0; r < n; r++) mx = std::max(mx, Sp[size_t(r) * n_head + h]);
                        std::fill(o.begin(), o.end(), 0.0f);
                        float den[kS] = {};
                        for (uint32_t r = 0; r < n; r++) {
                          const float e = quant::fast::exp(Sp[size_t(r) * n_head + h] - mx);
                          const int sl = quant::fast::slice_of(r);
                          den[sl] = den[sl] + e;
                          float* os = o.data() + size_t(sl) * d;
                          const float* v = rp[r];
                          for (uint32_t i = 0; i < d; i++) os[i] = os[i] + e * v[i];
                        }
                        const float denom = quant::fast::exp(sinks[h] - mx) + quant::fast::tree(den);
                        float* oh = out_heads + uint64_t(h) * d;
                        for (uint32_t i = 0; i < d; i++) {
                          float p[kS];
                          for (int sl = 0; sl < kS; sl++) p[sl] = o[size_t(sl) * d + i];
                          oh[i] = quant::fast::tree(p) / denom;
                        }
                      }
                    });
}

}  // namespace ds4::model
