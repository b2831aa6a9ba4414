// IQ2_XXS: 256-element blocks of 66 bytes (f16 d, then 8 groups of 32 as two u32 each: four grid
// indices, four 7-bit sign indices and a 4-bit scale). Dequantization and the dot with Q8_K
// follow GGML's and ds4.c's float order exactly; the SIMD kernels (arch/) compute each group's
// integer sum with SIMD and do the same float steps, so they are bit-identical. The quantizer is
// a branch-and-bound grid search that gives the bytes of a full scan, plain or importance-
// weighted (quantize_iq2_xxs_weighted, docs/quant.md §importance-weighted-quantization).
// Layout, order and search:
// docs/quant.md §block-layouts, §exact-order-of-the-integer-dots, §quantizers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"
#include "engine/quant/kquant_fit.hpp"

namespace ds4::quant::detail {

void dequantize_iq2_xxs(const void* src, float* dst, int64_t n) {
  const BlockIQ2_XXS* b = static_cast<const BlockIQ2_XXS*>(src);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int ib = 0; ib < 8; ib++) {
      uint32_t aux[2];
      std::memcpy(aux, b[i].qs + 4 * ib, 8);
      const float db = d * (0.5f + static_cast<float>(aux[1] >> 28)) * 0.25f;
      for (int l = 0; l < 4; l++) {
        const uint64_t grid = kIq2xxsGrid[(aux[0] >> (8 * l)) & 255];
        const uint8_t signs = kIq2Signs.mask[(aux[1] >> (7 * l)) & 127];
        for (int j = 0; j < 8; j++) {
          const float g = static_cast<float>((grid >> (8 * j)) & 255);
          dst[i * QK_K + 32 * ib + 8 * l + j] = db * g * ((signs >> j) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

namespace {

struct GridFit {
  float err;
  uint8_t index;  // grid point
  uint8_t signs;  // 8-bit negative mask with even popcount
};

// The grid as a trie over per-element magnitude levels 0/1/2 (bytes 8/25/43), element 0 first:
// a candidate's error is a sum of per-element table entries in element order, so every grid
// point below a trie node shares that node's partial sum, and a subtree whose partial sum already
// exceeds the best error so far can be skipped (the terms left to add are >= 0, and adding a
// non-negative float never decreases a sum). A node at depth 8 is a leaf holding the grid index.
struct GridTrie {
  struct Node {
    int16_t child[3] = {-1, -1, -1};  // depth < 8: child node per level; depth 8: child[0] = grid index
  };
  std::vector<Node> nodes{1};
  GridTrie() {
    for (int k = 0; k < 256; k++) {
      int node = 0;
      for (int j = 0; j < 8; j++) {
        const int b = static_cast<int>((kIq2xxsGrid[k] >> (8 * j)) & 255);
        const int level = b == 8 ? 0 : (b == 25 ? 1 : 2);
        if (nodes[node].child[level] < 0) {
          nodes[node].child[level] = static_cast<int16_t>(nodes.size());
          nodes.emplace_back();
        }
        node = nodes[node].child[level];
      }
      nodes[node].child[0] = static_cast<int16_t>(k);
    }
  }
};
const GridTrie& grid_trie() {
  static const GridTrie t;
  return t;
}
constexpr float kMagnitudes[3] = {8.0f, 25.0f, 43.0f};

// Branch-and-bound over the trie for fit_eight. Visits each node's children cheapest level first,
// so a good leaf is found at once and most subtrees are cut after a few elements. The result is
// the one a scan of all 256 grid points in index order would pick (the lowest error, the lowest
// grid index among equal errors), computed with the same float operations in the same order.
// Besides the plain partial-sum test, a subtree is cut when its partial sum plus the cheapest
// possible rest (rest[j]: the per-element minima) exceeds the best by more than float rounding
// could account for: an 8-term sum of non-negative floats is within 8 ulp of its exact value,
// far inside kBoundSlack, so the bound never cuts a grid point that could win.
constexpr float kBoundSlack = 0.99999f;

struct EightSearch {
  const GridTrie& trie;
  float err[8][3], extra[8][3];
  float rest[9];        // rest[j] = sum over i >= j of min_level err[i][level]
  uint8_t order[8][3];  // levels by increasing err[j][level]
  uint8_t neg;
  bool odd;
  float best_err;
  int best_index;  // 256 until a grid point beats the caller's limit
  uint8_t best_signs;

  // The tables are filled by fit_eight; not zeroing them first saves a tenth of the search.
  EightSearch(float limit) : trie(grid_trie()), neg(0), odd(false), best_err(limit), best_index(256), best_signs(0) {}

  void descend(int node, int j, float e, float min_extra, int flip) {
    if (j == 8) {
      const int k = trie.nodes[node].child[0];
      const float total = odd ? e + min_extra : e;
      if (total < best_err || (total == best_err && k < best_index)) {
        best_err = total;
        best_index = k;
        best_signs = static_cast<uint8_t>(odd ? neg ^ (1u << flip) : neg);
      }
      return;
    }
    for (const uint8_t level : order[j]) {
      const int child = trie.nodes[node].child[level];
      if (child < 0) continue;
      const float e2 = e + err[j][level];
      if (e2 > best_err || (e2 + rest[j + 1]) * kBoundSlack > best_err) continue;
      float m2 = min_extra;
      int f2 = flip;
      if (j == 0 || extra[j][level] < m2) m2 = extra[j][level], f2 = j;  // cheapest sign to flip
      descend(child, j + 1, e2, m2, f2);
    }
  }
};

// Best grid point and signs for 8 values at group scale g (value = g * grid byte * sign). An odd
// number of negative values must flip one sign (the grid's sign patterns have even parity): the
// element where that costs least, the first one among equals. With a finite `limit` only a fit
// whose error is below it matters: {INFINITY, 0, negatives} says there is none.
template <bool W>
GridFit fit_eight(const float* x, float g, float limit, const float* w) {
  EightSearch s(limit);
  for (int j = 0; j < 8; j++) {
    const float a = std::fabs(x[j]);
    const float wj = W ? w[j] : 1.0f;  // plain: x*1 folds away, the old code exactly
    if (x[j] < 0) s.neg |= static_cast<uint8_t>(1u << j);
    for (int l = 0; l < 3; l++) {
      const float v = g * kMagnitudes[l];
      s.err[j][l] = wj * ((a - v) * (a - v));
      s.extra[j][l] = wj * (4.0f * a * v);  // (a+v)^2 - (a-v)^2: cost of flipping this sign
    }
    uint8_t* o = s.order[j];  // three-element bubble sort: stable, no library call
    o[0] = 0, o[1] = 1, o[2] = 2;
    const float* ej = s.err[j];
    if (ej[o[1]] < ej[o[0]]) std::swap(o[0], o[1]);
    if (ej[o[2]] < ej[o[1]]) std::swap(o[1], o[2]);
    if (ej[o[1]] < ej[o[0]]) std::swap(o[0], o[1]);
  }
  s.rest[8] = 0.0f;
  for (int j = 7; j >= 0; j--) s.rest[j] = s.rest[j + 1] + s.err[j][s.order[j][0]];
  s.odd = __builtin_popcount(s.neg) & 1;
  s.descend(0, 0, 0.0f, 0.0f, 0);
  if (s.best_index == 256) return {INFINITY, 0, s.neg};
  return {s.best_err, static_cast<uint8_t>(s.best_index), s.best_signs};
}

struct GroupFit {
  float err;
  GridFit part[4];
};

// The four 8-value fits of a group of 32 at group scale g. Callers keep a fit only when its error
// is below `limit`; once the running sum reaches it (the parts left are >= 0) the search stops and
// the error is INFINITY. With limit INFINITY every part is searched, as before any bound existed.
template <bool W>
GroupFit fit_group(const float* x, const float* w, float g, float limit = INFINITY) {
  GroupFit f{0, {}};
  for (int l = 0; l < 4; l++) {
    f.part[l] = fit_eight<W>(x + 8 * l, g, limit, W ? w + 8 * l : nullptr);
    f.err += f.part[l].err;
    if (limit < INFINITY && !(f.err < limit)) return {INFINITY, {}};
  }
  return f;
}

// (Weighted) least-squares group scale for the chosen grid points and signs.
template <bool W>
float refit_scale(const float* x, const float* w, const GroupFit& f) {
  double num = 0, den = 0;
  for (int l = 0; l < 4; l++) {
    const uint64_t grid = kIq2xxsGrid[f.part[l].index];
    for (int j = 0; j < 8; j++) {
      double v = static_cast<double>((grid >> (8 * j)) & 255);
      if ((f.part[l].signs >> j) & 1) v = -v;
      const double wj = W ? w[8 * l + j] : 1.0;
      num += wj * (v * x[8 * l + j]);
      den += wj * (v * v);
    }
  }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

// Best continuous group scale for 32 values.
template <bool W>
float best_group_scale(const float* x, const float* w) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
  if (amax == 0) return 0;
  float best_g = amax / 43.0f, best_err = INFINITY;
  constexpr int kSteps = 8;
  for (int s = 0; s <= kSteps; s++) {  // the top magnitude 43*g spans 0.5x .. 1.25x amax
    const float g = amax / 43.0f * (0.5f + 0.75f * static_cast<float>(s) / kSteps);
    const GroupFit f = fit_group<W>(x, w, g, best_err);
    if (f.err < best_err) {
      best_err = f.err;
      best_g = g;
    }
  }
  const float g2 = refit_scale<W>(x, w, fit_group<W>(x, w, best_g));
  if (g2 > 0 && fit_group<W>(x, w, g2, best_err).err < best_err) best_g = g2;
  return best_g;
}

void pack_group(BlockIQ2_XXS& y, int ib, const GroupFit& f, int s) {
  uint32_t aux[2] = {0, static_cast<uint32_t>(s) << 28};
  for (int l = 0; l < 4; l++) {
    aux[0] |= static_cast<uint32_t>(f.part[l].index) << (8 * l);
    aux[1] |= static_cast<uint32_t>(f.part[l].signs & 127) << (7 * l);
  }
  std::memcpy(y.qs + 4 * ib, aux, 8);
}

template <bool W>
void quantize_iq2_xxs_impl(const float* src, void* dst, int64_t n, const float* importance) {
  BlockIQ2_XXS* out = static_cast<BlockIQ2_XXS*>(dst);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float* x = src + i * QK_K;
    BlockIQ2_XXS& y = out[i];
    std::memset(&y, 0, sizeof(y));
    float wbuf[QK_K];
    if (W) element_weights(x, importance + i * QK_K, QK_K, 1.0f, wbuf);
    const float* w = W ? wbuf : nullptr;
    auto wg = [&](int ib) { return W ? w + 32 * ib : nullptr; };
    float g[8], gmax = 0;
    for (int ib = 0; ib < 8; ib++) {
      g[ib] = best_group_scale<W>(x + 32 * ib, wg(ib));
      gmax = std::max(gmax, g[ib]);
    }
    if (gmax == 0) continue;
    // db = d*(0.5+s)/4 with s <= 15: d0 makes the largest group scale s = 15.
    const float d0 = 4.0f * gmax / 15.5f;
    float best_err = INFINITY;
    for (const float t : {0.84f, 0.88f, 0.92f, 0.96f, 1.0f, 1.04f}) {
      const uint16_t d16 = f32_to_f16(d0 * t);
      const float d = f16_to_f32(d16);
      if (d <= 0) continue;
      BlockIQ2_XXS cand{};
      cand.d = d16;
      float err = 0;
      for (int ib = 0; ib < 8; ib++) {
        const int s0 = std::clamp(nearest_int(4.0f * g[ib] / d - 0.5f), 0, 15);
        float gerr = INFINITY;
        for (int s = std::max(0, s0 - 1); s <= std::min(15, s0 + 1); s++) {
          const float db = d * (0.5f + static_cast<float>(s)) * 0.25f;
          const GroupFit f = fit_group<W>(x + 32 * ib, wg(ib), db, gerr);
          if (f.err < gerr) {
            gerr = f.err;
            pack_group(cand, ib, f, s);
          }
        }
        err += gerr;
        if (err >= best_err) break;
      }
      if (err < best_err) {
        best_err = err;
        y = cand;
      }
    }
  }
}

}  // namespace

void quantize_iq2_xxs(const float* src, void* dst, int64_t n) { quantize_iq2_xxs_impl<false>(src, dst, n, nullptr); }
void quantize_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_iq2_xxs_impl<true>(src, dst, n, importance);
}

}  // namespace ds4::quant::detail
