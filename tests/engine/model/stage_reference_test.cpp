// Stage-level checks against an independent float64 reference written from the spec
// (docs/model.md §forward-pass): each engine stage, fed the same inputs, must agree
// within 1e-5 relative. Quantization steps (Q8_0 activations and weights) are applied
// identically on both sides: the reference dequantizes exactly what the engine multiplies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/compressor.hpp"
#include "engine/model/hyper_connection.hpp"
#include "engine/model/indexer.hpp"
#include "engine/model/moe.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/output_head.hpp"
#include "engine/model/rope.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::model {
namespace {

std::mt19937 rng(1234);
std::vector<float> randn(size_t n, float sd = 1.0f) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |a - b| <= tol * max_i |ref_i|: relative to the stage output's scale (an elementwise relative
// test would fail on values that are small through cancellation, whose error is an ulp of the
// inputs, not of the result).
void expect_close(const float* got, const double* ref, size_t n, const char* what, double tol = 1e-5) {
  double scale = 0;
  for (size_t i = 0; i < n; i++) scale = std::max(scale, std::fabs(ref[i]));
  for (size_t i = 0; i < n; i++)
    ASSERT_LE(std::fabs(double(got[i]) - ref[i]), tol * std::max(scale, 1e-30))
        << what << " [" << i << "] got " << got[i] << " want " << ref[i];
}

// ---- Hyper-connections -------------------------------------------------------------------

TEST(StageReference, HyperConnectionSplitSinkhorn) {
  const uint32_t n = 4, iters = 20;
  const double eps = 1e-6;
  for (int trial = 0; trial < 20; trial++) {
    auto mix = randn(24, 2.0f), base = randn(24);
    const float scale[3] = {0.7f, 0.4f, 0.9f};
    HcSplit s;
    hc_split(mix.data(), scale, base.data(), n, iters, float(eps), trial % 2 == 0, s);  // both modes
    double pre[4], post[4], C[4][4];  // C[src][dst], flat index dst + 4*src
    for (uint32_t i = 0; i < n; i++) {
      pre[i] = 1.0 / (1.0 + std::exp(-(double(mix[i]) * scale[0] + base[i]))) + eps;
      post[i] = 2.0 / (1.0 + std::exp(-(double(mix[n + i]) * scale[1] + base[n + i])));
    }
    for (uint32_t r = 0; r < n; r++) {
      double mx = -1e300, sum = 0;
      double v[4];
      for (uint32_t c = 0; c < n; c++)
        mx = std::max(mx, v[c] = double(mix[8 + c + 4 * r]) * scale[2] + base[8 + c + 4 * r]);
      for (uint32_t c = 0; c < n; c++) sum += (v[c] = std::exp(v[c] - mx));
      for (uint32_t c = 0; c < n; c++) C[r][c] = v[c] / sum + eps;
    }
    auto col_norm = [&] {
      for (uint32_t c = 0; c < n; c++) {
        double s2 = eps;
        for (uint32_t r = 0; r < n; r++) s2 += C[r][c];
        for (uint32_t r = 0; r < n; r++) C[r][c] /= s2;
      }
    };
    auto row_norm = [&] {
      for (uint32_t r = 0; r < n; r++) {
        double s2 = eps;
        for (uint32_t c = 0; c < n; c++) s2 += C[r][c];
        for (uint32_t c = 0; c < n; c++) C[r][c] /= s2;
      }
    };
    col_norm();
    for (uint32_t it = 1; it < iters; it++) row_norm(), col_norm();
    double comb[16];
    for (uint32_t r = 0; r < n; r++)
      for (uint32_t c = 0; c < n; c++) comb[c + 4 * r] = C[r][c];
    expect_close(s.pre, pre, 4, "pre");
    expect_close(s.post, post, 4, "post");
    expect_close(s.comb, comb, 16, "comb");
    // Doubly stochastic after Sinkhorn: columns (sum over src) are 1 up to eps effects.
    for (uint32_t c = 0; c < n; c++) {
      double col = 0;
      for (uint32_t r = 0; r < n; r++) col += s.comb[c + 4 * r];
      EXPECT_NEAR(col, 1.0, 1e-4);
    }
  }
}

TEST(StageReference, HyperConnectionWeightedSumAndPost) {
  const uint32_t n = 4, D = 64;
  auto H = randn(n * D), y = randn(D);
  HcSplit s;
  auto mix = randn(24), base = randn(24);
  const float scale[3] = {0.5f, 0.5f, 0.5f};
  hc_split(mix.data(), scale, base.data(), n, 20, 1e-6f, true, s);
  std::vector<float> x(D), out(n * D);
  hc_weighted_sum(H.data(), s.pre, D, n, x.data());
  hc_post(y.data(), H.data(), s, D, n, out.data());
  std::vector<double> rx(D), rout(n * D);
  for (uint32_t d = 0; d < D; d++)
    for (uint32_t h = 0; h < n; h++) rx[d] += double(H[h * D + d]) * s.pre[h];
  for (uint32_t dst = 0; dst < n; dst++)
    for (uint32_t d = 0; d < D; d++) {
      double acc = double(y[d]) * s.post[dst];
      for (uint32_t src = 0; src < n; src++) acc += double(s.comb[dst + 4 * src]) * H[src * D + d];
      rout[dst * D + d] = acc;
    }
  expect_close(x.data(), rx.data(), D, "pre sum");
  expect_close(out.data(), rout.data(), n * D, "post");
}

// ---- RoPE / YaRN -------------------------------------------------------------------------

ModelConfig rope_cfg() {
  ModelConfig c;
  c.n_rot = 64;
  c.head_dim = 512;
  c.rope_base = 10000;
  c.compress_rope_base = 160000;
  c.rope_scale_factor = 16;
  c.yarn_beta_fast = 32;
  c.yarn_beta_slow = 1;
  c.rope_orig_ctx = 65536;
  c.compress_ratio = {0, 4};
  return c;
}

void rope_reference(double* x, uint32_t n_rot, uint32_t pos, bool yarn, bool inverse) {
  const double base = yarn ? 160000.0 : 10000.0;
  const double pi = 3.14159265358979323846;
  auto corr = [&](double beta) { return n_rot * std::log(65536.0 / (2 * pi * beta)) / (2 * std::log(base)); };
  const double lo = std::floor(corr(32)), hi = std::ceil(corr(1));
  for (uint32_t k = 0; k < n_rot / 2; k++) {
    const double ext = pos * std::pow(base, -2.0 * k / n_rot);
    double theta = ext;
    if (yarn) {
      const double ramp = 1.0 - std::clamp((k - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
      theta = (ext / 16.0) * (1 - ramp) + ext * ramp;
    }
    const double c = std::cos(theta), s = (inverse ? -1 : 1) * std::sin(theta);
    const double x0 = x[2 * k], x1 = x[2 * k + 1];
    x[2 * k] = x0 * c - x1 * s;
    x[2 * k + 1] = x0 * s + x1 * c;
  }
}

TEST(StageReference, RopeAndYarnMatchFormula) {
  const ModelConfig cfg = rope_cfg();
  for (uint32_t layer : {0u, 1u}) {
    const RopeParams p = rope_params_for_layer(cfg, layer);
    if (layer == 1) {
      EXPECT_EQ(p.corr_dims[0], 15.0f);
      EXPECT_EQ(p.corr_dims[1], 25.0f);
    }
    for (uint32_t pos : {0u, 1u, 3u, 7u, 15u}) {
      for (int mode = 0; mode < 4; mode++) {
        const bool inverse = mode & 1, exact = mode & 2;
        auto x = randn(512);
        std::vector<double> ref(x.begin(), x.end());
        rope_tail(x.data(), 1, 512, p, pos, inverse, exact);
        rope_reference(ref.data() + 448, 64, pos, layer == 1, inverse);
        expect_close(x.data(), ref.data(), 512, "rope");
      }
    }
  }
}

TEST(StageReference, InverseRopeUndoesRope) {
  const ModelConfig cfg = rope_cfg();
  const RopeParams p = rope_params_for_layer(cfg, 1);
  auto x = randn(2 * 512);
  auto y = x;
  rope_tail(y.data(), 2, 512, p, 1000, false, false);
  rope_tail(y.data(), 2, 512, p, 1000, true, false);
  for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(y[i], x[i], 1e-5f * std::max(1.0f, std::fabs(x[i])));
}

// ---- Compressor pooling ------------------------------------------------------------------

TEST(StageReference, CompressorPoolRatio4OverlapsWindows) {
  CompressorState st;
  st.init(4, 128);
  std::vector<float> ape_f(size_t(st.width) * 4);
  for (auto& a : ape_f) a = randn(1)[0];
  std::vector<uint16_t> ape(ape_f.size());
  for (size_t i = 0; i < ape.size(); i++) ape[i] = f32_to_f16(ape_f[i]);
  std::vector<std::vector<float>> kvs, scs;
  std::vector<float> pooled(128);
  for (uint32_t pos = 0; pos < 8; pos++) {
    kvs.push_back(randn(st.width));
    scs.push_back(randn(st.width));
    const bool emit = compressor_store(st, kvs.back().data(), scs.back().data(), ape.data(), pos);
    EXPECT_EQ(emit, pos % 4 == 3);
    if (!emit) continue;
    compressor_pool(st, pos == 7, pooled.data());  // Fast, then Exact
    std::vector<double> ref(128);
    for (uint32_t j = 0; j < 128; j++) {
      std::vector<std::pair<double, double>> cand;  // (score, value)
      for (uint32_t r = 0; r < 4; r++) {
        if (pos >= 7) {  // previous window: first half of the channels
          const uint32_t p = pos - 7 + r;
          cand.emplace_back(double(scs[p][j]) + f16_to_f32(ape[r * st.width + j]), kvs[p][j]);
        }
        const uint32_t c = pos - 3 + r;  // current window: second half
        cand.emplace_back(double(scs[c][128 + j]) + f16_to_f32(ape[r * st.width + 128 + j]), kvs[c][128 + j]);
      }
      double mx = -1e300, den = 0, num = 0;
      for (auto& [s, v] : cand) mx = std::max(mx, s);
      for (auto& [s, v] : cand) den += std::exp(s - mx), num += std::exp(s - mx) * v;
      ref[j] = num / den;
    }
    expect_close(pooled.data(), ref.data(), 128, "ratio-4 pool");
  }
}

TEST(StageReference, CompressorPoolRatio128) {
  CompressorState st;
  st.init(128, 64);
  std::vector<uint16_t> ape(size_t(st.width) * 128, 0);
  std::vector<std::vector<float>> kvs, scs;
  std::vector<float> pooled(64);
  for (uint32_t pos = 0; pos < 128; pos++) {
    kvs.push_back(randn(64));
    scs.push_back(randn(64, 3.0f));
    compressor_store(st, kvs.back().data(), scs.back().data(), ape.data(), pos);
  }
  std::vector<double> ref(64);
  for (uint32_t j = 0; j < 64; j++) {
    double mx = -1e300, den = 0, num = 0;
    for (uint32_t p = 0; p < 128; p++) mx = std::max(mx, double(scs[p][j]));
    for (uint32_t p = 0; p < 128; p++) den += std::exp(scs[p][j] - mx), num += std::exp(scs[p][j] - mx) * kvs[p][j];
    ref[j] = num / den;
  }
  for (bool exact : {true, false}) {  // ratio 128 does not roll: the same window twice
    compressor_pool(st, exact, pooled.data());
    expect_close(pooled.data(), ref.data(), 64, "ratio-128 pool");
  }
}

// ---- Indexer -----------------------------------------------------------------------------

TEST(StageReference, IndexerScoresAndTopK) {
  const uint32_t H = 4, d = 128, n = 40, k = 8;
  auto q = randn(H * d), w = randn(H);
  RowStore rows;
  rows.init(d, 100);
  for (uint32_t c = 0; c < n; c++) {
    auto r = randn(d);
    std::memcpy(rows.append(), r.data(), d * sizeof(float));
  }
  std::vector<uint8_t> allowed;
  std::vector<float> scores;
  for (bool exact : {true, false}) {
    indexer_select(q.data(), w.data(), H, rows, k, exact, quant::best_isa(), allowed, scores);
    std::vector<double> ref(n);
    for (uint32_t c = 0; c < n; c++)
      for (uint32_t h = 0; h < H; h++) {
        double dot = 0;
        for (uint32_t i = 0; i < d; i++) dot += double(rows.row(c)[i]) * q[h * d + i];
        ref[c] += double(w[h]) * std::max(0.0, dot);
      }
    expect_close(scores.data(), ref.data(), n, "indexer scores");
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ref[a] > ref[b]; });
    for (uint32_t i = 0; i < n; i++) EXPECT_EQ(allowed[order[i]], i < k ? 1 : 0) << "rank " << i;
  }
  // Fewer rows than top_k: everything is visible.
  indexer_select(q.data(), w.data(), H, rows, n + 1, true, quant::exact_isa(), allowed, scores);
  EXPECT_EQ(std::count(allowed.begin(), allowed.end(), 1), long(n));
}

TEST(StageReference, IndexerTiesGoToLowerIndex) {
  const uint32_t d = 128;
  RowStore rows;
  rows.init(d, 10);
  auto base = randn(d);
  for (int c = 0; c < 5; c++) std::memcpy(rows.append(), base.data(), d * sizeof(float));
  auto q = base;  // positive dot for every row, all equal
  const float w = 1.0f;
  std::vector<uint8_t> allowed;
  std::vector<float> scores;
  for (bool exact : {true, false}) {
    indexer_select(q.data(), &w, 1, rows, 2, exact, quant::best_isa(), allowed, scores);
    EXPECT_EQ(allowed, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  }
}

// ---- Attention with sink -----------------------------------------------------------------

TEST(StageReference, AttentionWithSinkOverRawAndCompressedRows) {
  const uint32_t H = 4, d = 512, n_raw = 20, n_comp = 6;
  kernels::ThreadPool pool(2);
  LayerState st;
  st.ratio = 4;
  st.head_dim = d;
  st.raw_cap = 18;  // the ring wraps: the last 18 rows stay, attention reads the last 16
  st.raw_window = 16;
  st.raw.assign(size_t(st.raw_cap) * d, 0);
  std::vector<std::vector<float>> raw_rows;
  for (uint32_t r = 0; r < n_raw; r++) {
    raw_rows.push_back(randn(d, 0.2f));
    std::memcpy(st.push_raw_slot(), raw_rows.back().data(), d * sizeof(float));
  }
  st.comp.init(d, 10);
  std::vector<std::vector<float>> comp_rows;
  for (uint32_t r = 0; r < n_comp; r++) {
    comp_rows.push_back(randn(d, 0.2f));
    std::memcpy(st.comp.append(), comp_rows.back().data(), d * sizeof(float));
  }
  const std::vector<uint8_t> allowed = {1, 0, 1, 1, 0, 1};
  auto q = randn(H * d, 0.5f), sinks = randn(H);
  std::vector<float> out(H * d);
  for (bool exact : {true, false}) {
    attend(st, q.data(), H, sinks.data(), allowed.data(), exact, quant::best_isa(), pool, out.data());
    std::vector<double> ref(H * d);
    for (uint32_t h = 0; h < H; h++) {
      std::vector<const float*> vis;
      for (uint32_t r = n_raw - st.raw_window; r < n_raw; r++) vis.push_back(raw_rows[r].data());
      for (uint32_t r = 0; r < n_comp; r++)
        if (allowed[r]) vis.push_back(comp_rows[r].data());
      std::vector<double> s(vis.size());
      double mx = sinks[h];
      for (size_t r = 0; r < vis.size(); r++) {
        for (uint32_t i = 0; i < d; i++) s[r] += double(q[h * d + i]) * vis[r][i];
        s[r] /= std::sqrt(double(d));
        mx = std::max(mx, s[r]);
      }
      double den = std::exp(sinks[h] - mx);
      for (size_t r = 0; r < vis.size(); r++) den += std::exp(s[r] - mx);
      for (size_t r = 0; r < vis.size(); r++)
        for (uint32_t i = 0; i < d; i++) ref[h * d + i] += std::exp(s[r] - mx) / den * vis[r][i];
    }
    expect_close(out.data(), ref.data(), H * d, "attention");
  }
}

// ---- Quantized projections: grouped output and output head --------------------------------

struct OwnedTensor {
  Tensor t;
  std::vector<uint8_t> bytes;
};

OwnedTensor make_tensor(const char* name, quant::Type type, uint64_t in, uint64_t out, const std::vector<float>& v) {
  OwnedTensor o;
  const auto& tr = quant::traits(type);
  const size_t rb = quant::row_bytes(type, in);
  o.bytes.resize(rb * out);
  for (uint64_t r = 0; r < out; r++) tr.quantize(v.data() + r * in, o.bytes.data() + r * rb, int64_t(in));
  o.t.name = name;
  o.t.type = type;
  o.t.ndim = 2;
  o.t.ne = {in, out, 1, 1};
  o.t.data = o.bytes.data();
  o.t.bytes = o.bytes.size();
  return o;
}

std::vector<double> dequant_weights(const Tensor& t) {
  std::vector<float> f(t.ne[0] * t.ne[1]);
  const size_t rb = quant::row_bytes(t.type, t.ne[0]);
  for (uint64_t r = 0; r < t.ne[1]; r++)
    quant::traits(t.type).dequantize(t.data + r * rb, f.data() + r * t.ne[0], int64_t(t.ne[0]));
  return {f.begin(), f.end()};
}

// The Q8_0 activation the engine multiplies: per-32 d = amax/127, q = round(x/d).
std::vector<double> q8_0_activation(const float* x, size_t n) {
  std::vector<uint8_t> buf(quant::act_row_bytes(quant::Type::Q8_0, int64_t(n)));
  quant::quantize_activation(quant::Type::Q8_0, x, buf.data(), int64_t(n));
  std::vector<double> out(n);
  for (size_t b = 0; b < n / 32; b++) {
    float d;
    std::memcpy(&d, buf.data() + b * 36, 4);
    for (size_t i = 0; i < 32; i++) out[b * 32 + i] = double(d) * int8_t(buf[b * 36 + 4 + i]);
  }
  return out;
}

Exec test_exec(kernels::ThreadPool& pool, bool exact) {
  Exec ex;
  ex.pool = &pool;
  ex.exact = exact;
  ex.isa = quant::best_isa();
  return ex;
}

TEST(StageReference, GroupedOutputProjection) {
  kernels::ThreadPool pool(2);
  ModelConfig cfg;
  cfg.n_head = 4;
  cfg.head_dim = 64;
  cfg.n_out_group = 2;
  cfg.out_lora_rank = 16;
  const uint32_t gd = cfg.group_dim(), G = 2, rank = 16, T = 3;
  auto w = make_tensor("attn_output_a", quant::Type::Q8_0, gd, G * rank, randn(size_t(gd) * G * rank, 0.1f));
  auto heads = randn(size_t(T) * cfg.q_dim());
  std::vector<float> low(size_t(T) * G * rank), tmp;
  QuantAct qa;
  grouped_output(test_exec(pool, true), cfg, w.t, heads.data(), int(T), low.data(), qa, tmp);
  const auto W = dequant_weights(w.t);
  for (uint32_t t = 0; t < T; t++) {
    const auto x = q8_0_activation(heads.data() + size_t(t) * cfg.q_dim(), cfg.q_dim());
    std::vector<double> ref(G * rank);
    for (uint32_t g = 0; g < G; g++)
      for (uint32_t r = 0; r < rank; r++)
        for (uint32_t i = 0; i < gd; i++) ref[g * rank + r] += W[(g * rank + r) * gd + i] * x[g * gd + i];
    expect_close(low.data() + size_t(t) * G * rank, ref.data(), G * rank, "grouped output");
  }
}

TEST(StageReference, OutputHead) {
  kernels::ThreadPool pool(2);
  ModelConfig cfg;
  cfg.n_hc = 4;
  cfg.n_embd = 64;
  cfg.n_vocab = 40;
  const uint32_t hc = cfg.hc_dim(), D = cfg.n_embd, V = cfg.n_vocab;
  Weights w;
  auto fn = make_tensor("output_hc_fn", quant::Type::F16, hc, 4, randn(size_t(hc) * 4, 0.05f));
  auto out = make_tensor("output", quant::Type::Q8_0, D, V, randn(size_t(D) * V, 0.2f));
  std::vector<float> scale = {0.6f}, base = randn(4), norm = randn(D, 0.1f);
  for (auto& n : norm) n += 1.0f;
  w.output_hc_fn = fn.t;
  w.output = out.t;
  w.output_hc_scale.data = reinterpret_cast<const uint8_t*>(scale.data());
  w.output_hc_base.data = reinterpret_cast<const uint8_t*>(base.data());
  w.output_norm.data = reinterpret_cast<const uint8_t*>(norm.data());
  auto H = randn(hc);
  std::vector<float> logits(V);
  HeadScratch s;
  output_head(test_exec(pool, true), cfg, w, H.data(), 1, logits.data(), s);

  // Reference: weightless RMSNorm, sigmoid weights (+eps), collapse, RMSNorm, Q8_0 head.
  double ss = 0;
  for (float h : H) ss += double(h) * h;
  const double inv = 1.0 / std::sqrt(ss / hc + 1e-6);
  const auto FN = dequant_weights(fn.t);
  std::vector<float> y(D);
  double wt[4];
  for (uint32_t i = 0; i < 4; i++) {
    double pre = 0;
    for (uint32_t j = 0; j < hc; j++) pre += FN[i * hc + j] * (H[j] * inv);
    wt[i] = 1.0 / (1.0 + std::exp(-(pre * scale[0] + base[i]))) + 1e-6;
  }
  std::vector<double> yd(D);
  for (uint32_t d = 0; d < D; d++)
    for (uint32_t h = 0; h < 4; h++) yd[d] += wt[h] * H[h * D + d];
  double ys = 0;
  for (double v : yd) ys += v * v;
  const double yinv = 1.0 / std::sqrt(ys / D + 1e-6);
  // The engine quantizes its own f32 normed vector; quantize the same vector for the reference.
  std::vector<float> yn(D);
  for (uint32_t d = 0; d < D; d++) yn[d] = float(yd[d] * yinv * norm[d]);
  expect_close(s.norm.data(), std::vector<double>(yn.begin(), yn.end()).data(), D, "head norm", 1e-5);
  const auto x = q8_0_activation(s.norm.data(), D);
  const auto WO = dequant_weights(out.t);
  std::vector<double> ref(V);
  for (uint32_t v = 0; v < V; v++)
    for (uint32_t d = 0; d < D; d++) ref[v] += WO[v * D + d] * x[d];
  expect_close(logits.data(), ref.data(), V, "logits");
}

// ---- Router, expert weights, SwiGLU --------------------------------------------------------

TEST(StageReference, RouterTopKAndWeights) {
  ModelConfig cfg;
  cfg.n_expert = 16;
  cfg.n_expert_used = 6;
  cfg.expert_weight_scale = 1.5f;
  LayerWeights lw;
  auto bias = randn(16, 0.1f);
  lw.exp_probs_b.data = reinterpret_cast<const uint8_t*>(bias.data());
  for (int trial = 0; trial < 10; trial++) {
    auto logits = randn(16, 2.0f);
    std::vector<float> probs(16);
    router_probs(logits.data(), 16, trial % 2 == 0, probs.data());  // both modes
    std::vector<double> p(16);
    for (int i = 0; i < 16; i++) {
      const double x = logits[i];
      p[i] = std::sqrt(x > 20 ? x : std::log1p(std::exp(x)));
    }
    expect_close(probs.data(), p.data(), 16, "router probs");
    RoutedChoice c;
    route_token(cfg, lw, false, 5, probs.data(), c);
    std::vector<int> order(16);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] + bias[a] > p[b] + bias[b]; });
    double sum = 0;
    for (int k = 0; k < 6; k++) sum += p[order[k]];
    for (int k = 0; k < 6; k++) {
      EXPECT_EQ(c.expert[k], order[k]);
      const double want = p[order[k]] / sum * 1.5;  // unbiased probabilities
      EXPECT_NEAR(c.weight[k], want, 1e-5 * want);
    }
  }
}

TEST(StageReference, HashRoutingIgnoresBias) {
  ModelConfig cfg;
  cfg.n_expert = 16;
  cfg.n_expert_used = 6;
  cfg.expert_weight_scale = 1.5f;
  LayerWeights lw;
  std::vector<float> bias(16, 100.0f);
  bias[0] = -100.0f;
  lw.exp_probs_b.data = reinterpret_cast<const uint8_t*>(bias.data());
  std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 15, 14, 13, 12, 11, 10};  // 2 tokens x 6
  lw.ffn_gate_tid2eid.data = reinterpret_cast<const uint8_t*>(table.data());
  lw.ffn_gate_tid2eid.ne = {6, 2, 1, 1};
  auto probs = randn(16);
  for (auto& x : probs) x = std::fabs(x) + 0.1f;
  RoutedChoice c;
  route_token(cfg, lw, true, 1, probs.data(), c);
  double sum = 0;
  for (int k = 0; k < 6; k++) sum += probs[table[6 + k]];
  for (int k = 0; k < 6; k++) {
    EXPECT_EQ(c.expert[k], table[6 + k]);
    EXPECT_NEAR(c.weight[k], probs[table[6 + k]] / sum * 1.5, 1e-6);
  }
  EXPECT_THROW(route_token(cfg, lw, true, 2, probs.data(), c), std::out_of_range);
}

TEST(StageReference, SwiGluClamps) {
  for (float g : {-30.0f, -3.0f, -0.5f, 0.0f, 0.7f, 9.0f, 10.0f, 25.0f})
    for (float u : {-40.0f, -10.0f, -1.0f, 0.3f, 12.0f}) {
      const double gc = std::min(double(g), 10.0), uc = std::clamp(double(u), -10.0, 10.0);
      const double want = gc / (1.0 + std::exp(-gc)) * uc;
      EXPECT_NEAR(swiglu_clamped<ExactMath>(g, u, 10.0f), want, 1e-5 * std::max(1.0, std::fabs(want))) << g << " " << u;
      EXPECT_NEAR(swiglu_clamped<FastMath>(g, u, 10.0f), want, 1e-5 * std::max(1.0, std::fabs(want))) << g << " " << u;
    }
}

}  // namespace
}  // namespace ds4::model
