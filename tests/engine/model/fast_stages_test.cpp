// The model's non-matmul stages in the Fast order (docs/arithmetic.md §rmsnorm,
// docs/arithmetic.md §attention, docs/arithmetic.md §rope): the documented sequence written out
// here from the generic Fast float dot and the shared scalar steps must give the engine's bits
// for every kernel set and thread count, and the Fast RoPE angles must stay accurate at
// positions where ds4's f32 recurrence drifts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/model/rope.hpp"
#include "engine/quant/fast_math.hpp"
#include "engine/quant/fast_order.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::model {
namespace {

namespace fast = quant::fast;
constexpr quant::Isa kGenericFast{quant::Arch::Generic, quant::Order::Fast};

std::vector<float> randn(std::mt19937& rng, size_t n, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// docs/arithmetic.md §attention written out: one head at a time, rows in visible order, slice = position mod 8.
std::vector<float> attention_as_documented(const std::vector<const float*>& vis, const float* q, uint32_t H, uint32_t d,
                                           const float* sinks) {
  std::vector<float> out(size_t(H) * d);
  const float scale = 1.0f / std::sqrt(float(d));
  for (uint32_t h = 0; h < H; h++) {
    std::vector<float> s(vis.size());
    float m = sinks[h];
    for (size_t j = 0; j < vis.size(); j++) {
      s[j] = quant::dot(quant::Type::F32, vis[j], q + size_t(h) * d, d, kGenericFast) * scale;
      m = std::max(m, s[j]);
    }
    float den[8] = {};
    std::vector<float> o(8 * size_t(d), 0.0f);
    for (size_t j = 0; j < vis.size(); j++) {
      const float e = fast::exp(s[j] - m);
      den[j % 8] = den[j % 8] + e;
      for (uint32_t i = 0; i < d; i++) o[(j % 8) * d + i] = o[(j % 8) * d + i] + e * vis[j][i];
    }
    const float denom = fast::exp(sinks[h] - m) + fast::tree(den);
    for (uint32_t i = 0; i < d; i++) {
      float p[8];
      for (int sl = 0; sl < 8; sl++) p[sl] = o[sl * d + i];
      out[size_t(h) * d + i] = fast::tree(p) / denom;
    }
  }
  return out;
}

TEST(FastStages, AttentionFollowsTheDocumentedOrderOnEveryIsaAndThreadCount) {
  std::mt19937 rng(29);
  for (uint32_t d : {512u, 96u}) {
    const uint32_t H = 5, n_raw = 23, n_comp = 13;
    LayerState st;
    st.ratio = 4;
    st.head_dim = d;
    st.raw_cap = 20;  // the ring wraps: attention reads the last 17 rows
    st.raw_window = 17;
    st.raw.assign(size_t(st.raw_cap) * d, 0);
    std::vector<std::vector<float>> raw_rows, comp_rows;
    for (uint32_t r = 0; r < n_raw; r++) {
      raw_rows.push_back(randn(rng, d, 0.3f));
      std::memcpy(st.push_raw_slot(), raw_rows.back().data(), d * sizeof(float));
    }
    st.comp.init(d, 16);
    for (uint32_t r = 0; r < n_comp; r++) {
      comp_rows.push_back(randn(rng, d, 0.3f));
      std::memcpy(st.comp.append(), comp_rows.back().data(), d * sizeof(float));
    }
    std::vector<uint8_t> allowed(n_comp);
    for (uint32_t r = 0; r < n_comp; r++) allowed[r] = r % 3 != 1;
    const auto q = randn(rng, size_t(H) * d, 0.6f), sinks = randn(rng, H, 1.0f);
    std::vector<const float*> vis;
    for (uint32_t r = n_raw - st.raw_window; r < n_raw; r++) vis.push_back(raw_rows[r].data());
    for (uint32_t r = 0; r < n_comp; r++)
      if (allowed[r]) vis.push_back(comp_rows[r].data());
    const auto want = attention_as_documented(vis, q.data(), H, d, sinks.data());

    for (int threads : {1, 2, 3})
      for (quant::Isa isa : quant::supported_isas()) {
        if (isa.order != quant::Order::Fast) continue;
        kernels::ThreadPool pool(threads);
        std::vector<float> got(size_t(H) * d);
        attend(st, q.data(), H, sinks.data(), allowed.data(), false, isa, pool, got.data());
        EXPECT_TRUE(same_bits(got, want)) << "d " << d << ", " << quant::isa_name(isa) << ", " << threads << " threads";
      }
    kernels::ThreadPool pool(2);
    std::vector<float> exact(size_t(H) * d);
    attend(st, q.data(), H, sinks.data(), allowed.data(), true, quant::exact_isa(), pool, exact.data());
    EXPECT_FALSE(same_bits(exact, want)) << "Fast should round differently from ds4's order somewhere";
  }
}

TEST(FastStages, RmsNormSumsExactSquaresInBinary64Slices) {
  std::mt19937 rng(7);
  Exec fast_ex, exact_ex;
  fast_ex.exact = false;
  fast_ex.isa = quant::best_isa();
  exact_ex.exact = true;
  int rows = 0, same_as_exact = 0;
  for (uint64_t n : {512u, 1000u, 4096u})
    for (int trial = 0; trial < 100; trial++) {
      const auto x = randn(rng, n, 2.0f), w = randn(rng, n, 1.0f);
      double sl[8] = {};
      for (uint64_t i = 0; i < n; i++) sl[i % 8] = sl[i % 8] + double(x[i]) * double(x[i]);
      const double ss = ((sl[0] + sl[1]) + (sl[2] + sl[3])) + ((sl[4] + sl[5]) + (sl[6] + sl[7]));
      const float r = 1.0f / std::sqrt(float(ss / double(n)) + 1e-6f);
      std::vector<float> want(n), want_nw(n);
      for (uint64_t i = 0; i < n; i++) want[i] = x[i] * r * w[i], want_nw[i] = x[i] * r;
      std::vector<float> got(n), got_nw(x), exact(n);
      rms_norm(fast_ex, got.data(), x.data(), w.data(), n, 1e-6f);
      rms_norm(fast_ex, got_nw.data(), got_nw.data(), nullptr, n, 1e-6f);  // in place
      ASSERT_TRUE(same_bits(got, want)) << "n " << n;
      ASSERT_TRUE(same_bits(got_nw, want_nw)) << "n " << n;
      rms_norm(exact_ex, exact.data(), x.data(), w.data(), n, 1e-6f);
      rows++;
      same_as_exact += same_bits(got, exact);
    }
  // Both sums are within 1e-12 of the real one, so the binary32 mean is nearly always the same.
  std::printf("RMSNorm: %d of %d rows bit-identical to ds4's serial binary64 sum\n", same_as_exact, rows);
  EXPECT_GE(same_as_exact, rows * 95 / 100);
}

// Distance in binary32 steps between got and the rounding of want.
double ulps(float got, long double want) {
  const float w = float(want);
  const float step = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(double(got) - double(w)) / double(step);
}

TEST(FastStages, RopeAnglesStayAccurateAtLongPositions) {
  ModelConfig c;
  c.n_rot = 64;
  c.head_dim = 512;
  c.rope_base = 10000;
  c.compress_ratio = {0};
  const RopeParams p = rope_params_for_layer(c, 0);
  double worst_fast = 0, worst_exact = 0;
  float cs_fast[64], cs_exact[64];
  for (uint32_t pos : {1u, 77u, 4096u, 65535u, 300000u, 1000000u}) {
    rope_angles(p, pos, false, false, cs_fast);
    rope_angles(p, pos, false, true, cs_exact);
    for (uint32_t k = 0; k < 32; k++) {
      const long double theta = (long double)pos * std::pow(10000.0L, -2.0L * k / 64.0L);
      const long double cw = std::cos(theta), sw = std::sin(theta);
      // Where |cos| or |sin| is tiny an ulp is tiny too: measure against the larger of the two.
      const long double big = std::max(std::fabs(cw), std::fabs(sw));
      const double ef = std::max(ulps(cs_fast[2 * k], cw), ulps(cs_fast[2 * k + 1], sw));
      const double ee = double(std::max(std::fabs(cs_exact[2 * k] - cw), std::fabs(cs_exact[2 * k + 1] - sw)) / big);
      if (std::fabs(cw) > 1e-3L && std::fabs(sw) > 1e-3L) worst_fast = std::max(worst_fast, ef);
      worst_exact = std::max(worst_exact, ee);
    }
  }
  std::printf("RoPE angles up to position 1e6: Fast within %.2f ulp; Exact (f32 recurrence) off by %.3g relative\n",
              worst_fast, worst_exact);
  EXPECT_LE(worst_fast, 1.0);
}

}  // namespace
}  // namespace ds4::model
