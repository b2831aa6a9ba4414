#pragma once
// The CPU side the GPU and the emulated KV tests share: inputs for the KV-format simulations (with
// the values where the formats' rounding and block scales turn: grid values, ties, block maxima on
// and next to a power-of-two boundary, zeros, amounts below the floors), compressor runs from
// random states across window ends (pos % ratio == ratio - 1, the ratio-4 roll), and indexer
// selections with ties and unselectable rows, each with the CPU function's result.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/model/compressor.hpp"
#include "engine/model/indexer.hpp"
#include "engine/model/kv_format.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rope.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/stage_cases.hpp"

namespace ds4::cuda::test {

// n values of one kind: 0 normal, 1 exact small grid values (ties of both formats), 2 values whose
// |max| sits on or one ulp beside 448 * 2^k or 6 * 2^k, 3 zeros and values under the floors.
inline std::vector<float> kv_values(std::mt19937& rng, size_t n, int kind) {
  std::vector<float> v = randn(rng, n, std::ldexp(1.0f, int(rng() % 16) - 8));
  for (size_t i = 0; i < n; i++) {
    if (kind == 1) v[i] = std::ldexp(float(int(rng() % 33) - 16), int(rng() % 8) - 6);
    if (kind == 2 && rng() % 8 == 0)
      v[i] = (rng() % 2 ? 448.0f : 6.0f) * std::ldexp(1.0f, int(rng() % 20) - 10) *
             (1.0f + float(rng() % 3) * std::numeric_limits<float>::epsilon()) * (rng() % 2 ? 1.0f : -1.0f);
    if (kind == 3) v[i] = rng() % 3 ? 0.0f : v[i] * 1e-39f;
  }
  return v;
}

enum class CaseFormat { Fp8, Fp4Hadamard };

// The CPU's formatting of rows x dim values: forward.cpp's raw-row and compressed-row steps.
inline std::vector<float> kv_format_want(std::vector<float> x, uint32_t rows, uint32_t dim, uint32_t n_rot,
                                         CaseFormat fmt, bool round) {
  for (uint32_t t = 0; t < rows; t++) {
    float* r = x.data() + size_t(t) * dim;
    if (fmt == CaseFormat::Fp8) model::fp8_kv_row_inplace(r, dim, n_rot);
    else model::indexer_qat_row_inplace(r, dim);
    if (round)
      for (uint32_t i = 0; i < dim; i++) r[i] = model::round_f16(r[i]);
  }
  return x;
}

// A compressor run: `T` tokens from pos0 into a state that had random earlier windows.
struct CompressorCase {
  uint32_t ratio, hd, pos0;
  int32_t T;
  model::CompressorState start, want;  // the state before and after
  std::vector<float> kv_in, score_in;  // T x width
  std::vector<uint16_t> ape;           // ratio x width
  std::vector<float> pooled;           // one hd row per completed window (compressor_pool, Fast)
};

inline CompressorCase make_compressor_case(std::mt19937& rng, uint32_t ratio, uint32_t hd, uint32_t pos0, int32_t T) {
  CompressorCase c{ratio, hd, pos0, T, {}, {}, {}, {}, {}, {}};
  c.start.init(ratio, hd);
  const uint32_t width = c.start.width;
  for (uint32_t i = 0; i < width * ratio; i++) c.ape.push_back(model::f32_to_f16(randn(rng, 1, 0.5f)[0]));
  // Earlier tokens through the CPU's store (some rows of the first window stay at -1e30 when
  // pos0 is early), a few scores far apart so that exp underflows.
  for (uint32_t p = pos0 > 2 * ratio ? pos0 - 2 * ratio : 0; p < pos0; p++) {
    auto kv = randn(rng, width, 1.0f), sc = randn(rng, width, 2.0f);
    if (p % 5 == 0) sc[rng() % width] = -120.0f;
    if (model::compressor_store(c.start, kv.data(), sc.data(), c.ape.data(), p)) model::compressor_roll(c.start);
  }
  c.kv_in = randn(rng, size_t(T) * width, 1.0f);
  c.score_in = randn(rng, size_t(T) * width, 2.0f);
  c.want = c.start;
  std::vector<float> row(hd);
  for (int32_t t = 0; t < T; t++)
    if (model::compressor_store(c.want, c.kv_in.data() + size_t(t) * width, c.score_in.data() + size_t(t) * width,
                                c.ape.data(), pos0 + uint32_t(t))) {
      model::compressor_pool(c.want, false, row.data());
      c.pooled.insert(c.pooled.end(), row.begin(), row.end());
    }
  return c;
}

// compressed_row_finish (Fast) of n rows at positions comp_pos[i], and the cos/sin tables the
// device needs for them (the host's rope_angles, Fast).
struct FinishCase {
  uint32_t n, dim, n_rot;
  CaseFormat fmt;
  std::vector<float> rows, norm_w, cs, want;
};

inline FinishCase make_finish_case(std::mt19937& rng, uint32_t n, uint32_t dim, uint32_t n_rot, CaseFormat fmt) {
  FinishCase c{n, dim, n_rot, fmt, randn(rng, size_t(n) * dim, 1.5f), randn(rng, dim, 1.0f), {}, {}};
  const model::RopeParams rope = model::rope_params_for_layer(rope_config(dim, n_rot), 1);
  model::Exec ex;
  ex.exact = false;
  ex.isa = quant::best_isa();
  c.want = c.rows;
  c.cs.resize(size_t(n) * n_rot);
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t comp_pos = 4 * i + 4 * uint32_t(rng() % 1000);
    model::rope_angles(rope, comp_pos, false, false, c.cs.data() + size_t(i) * n_rot);
    model::compressed_row_finish(
        ex, c.want.data() + size_t(i) * dim, dim, c.norm_w.data(), 1e-6f, rope, comp_pos,
        fmt == CaseFormat::Fp8 ? model::CompressedRowKind::Attention : model::CompressedRowKind::Indexer);
  }
  return c;
}

// An indexer selection over n rows; kind 0 random, 1 with duplicated rows (equal scores),
// 2 with most rows NaN (fewer selectable rows than top_k: the CPU then adds row 0).
struct IndexerCase {
  uint32_t n, top_k, n_head, dim;
  float wscale;
  std::vector<float> q, w, rows;
  std::vector<uint8_t> want;  // indexer_select's allowed mask
  std::vector<float> scores;  // and its scores (when n > top_k)
};

inline IndexerCase make_indexer_case(std::mt19937& rng, uint32_t n, uint32_t top_k, uint32_t n_head, int kind) {
  const uint32_t dim = 128;
  IndexerCase c{n,
                top_k,
                n_head,
                dim,
                1.0f / std::sqrt(float(dim * n_head)),
                randn(rng, size_t(n_head) * dim, 1.0f),
                randn(rng, n_head, 1.0f),
                {},
                {},
                {}};
  model::RowStore store;
  store.init(dim, n);
  for (uint32_t r = 0; r < n; r++) {
    float* row = store.append();
    const auto v = randn(rng, dim, 1.0f);
    std::memcpy(row, v.data(), dim * sizeof(float));
    if (kind == 1 && r >= 2 && rng() % 3 == 0) std::memcpy(row, store.row(uint32_t(rng() % r)), dim * sizeof(float));
    if (kind == 2 && r % 4 != 1) row[0] = std::numeric_limits<float>::quiet_NaN();
  }
  c.rows.assign(store.data.begin(), store.data.begin() + size_t(n) * dim);
  std::vector<float> w = c.w;
  if (n > top_k)
    for (float& x : w) x *= c.wscale;  // forward.cpp scales the weights before indexer_select
  quant::Isa isa = quant::best_isa();
  model::indexer_select(c.q.data(), w.data(), n_head, store, top_k, false, isa, c.want, c.scores);
  if (n <= top_k) c.scores.clear();
  return c;
}

}  // namespace ds4::cuda::test
