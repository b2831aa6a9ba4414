// The device's KV kernels through their launchers (engine/cuda/{kv_format,compressor,indexer}.hpp)
// against the CPU's Fast functions bit for bit, on the cases of kv_cases.hpp: the formats (in place
// and to row addresses), the compressor from random states across window ends, the compressed-row
// finish into a row store, and the indexer's mask and visible row list. Skips with the reason
// where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/compressor.hpp"
#include "engine/cuda/indexer.hpp"
#include "engine/cuda/kv_format.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/kv_cases.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::cuda::DeviceBuffer;
using ds4::cuda::KvFormat;

KvFormat device_format(CaseFormat f) { return f == CaseFormat::Fp8 ? KvFormat::Fp8 : KvFormat::Fp4Hadamard; }

// A device array of the addresses base + i * stride floats, i < n.
DeviceBuffer addresses(const DeviceBuffer& base, uint32_t n, uint32_t stride) {
  std::vector<uint64_t> a(n);
  for (uint32_t i = 0; i < n; i++) a[i] = base.ptr() + uint64_t(i) * stride * sizeof(float);
  DeviceBuffer d(sizeof(uint64_t) * (n ? n : 1));
  if (n) d.upload(a.data(), sizeof(uint64_t) * n);
  return d;
}

TEST(KvGpu, FormatsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  struct Shape {
    uint32_t dim, n_rot;
    CaseFormat fmt;
  };
  for (const Shape s :
       {Shape{512, 64, CaseFormat::Fp8}, Shape{128, 64, CaseFormat::Fp8}, Shape{128, 64, CaseFormat::Fp4Hadamard}})
    for (int kind = 0; kind < 4; kind++)
      for (const bool rnd : {false, true}) {
        const uint32_t rows = 37;
        const auto x = kv_values(rng, size_t(rows) * s.dim, kind);
        const auto want = kv_format_want(x, rows, s.dim, s.n_rot, s.fmt, rnd);
        auto dx = upload(x);
        ds4::cuda::kv_format_rows(dx, int32_t(rows), int32_t(s.dim), int32_t(s.n_rot), device_format(s.fmt), rnd,
                                  ds4::cuda::DeviceSpan{});
        EXPECT_EQ(first_difference(download(dx, x.size()), want), "") << "dim " << s.dim << ", kind " << kind;
        auto src = upload(x);
        DeviceBuffer out(x.size() * sizeof(float));
        const DeviceBuffer dst = addresses(out, rows, s.dim);
        ds4::cuda::kv_format_rows(src, int32_t(rows), int32_t(s.dim), int32_t(s.n_rot), device_format(s.fmt), rnd, dst);
        EXPECT_EQ(first_difference(download(out, x.size()), want), "") << "to addresses: dim " << s.dim;
      }
  DeviceBuffer x(512 * 4);
  EXPECT_THROW(ds4::cuda::kv_format_rows(x, 1, 512, 32, KvFormat::Fp8, true, ds4::cuda::DeviceSpan{}),
               std::invalid_argument);
  EXPECT_THROW(ds4::cuda::kv_format_rows(x, 1, 256, 0, KvFormat::Fp4Hadamard, true, ds4::cuda::DeviceSpan{}),
               std::invalid_argument);
  EXPECT_THROW(ds4::cuda::kv_format_rows(x, 2, 512, 64, KvFormat::Fp8, true, ds4::cuda::DeviceSpan{}),
               std::invalid_argument);
}

TEST(KvGpu, CompressorMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  struct Run {
    uint32_t ratio, hd, pos0;
    int32_t T;
  };
  for (const Run r : {Run{4, 512, 3, 1}, Run{4, 512, 7, 37}, Run{4, 128, 0, 6}, Run{4, 128, 13, 3},
                      Run{128, 512, 250, 300}, Run{128, 512, 0, 5}, Run{128, 512, 127, 1}}) {
    const CompressorCase c = make_compressor_case(rng, r.ratio, r.hd, r.pos0, r.T);
    ds4::cuda::DeviceCompressor st(int32_t(r.ratio), int32_t(r.hd));
    st.upload(c.start.kv.data(), c.start.score.data());
    const auto kv_in = upload(c.kv_in), score_in = upload(c.score_in);
    DeviceBuffer ape(c.ape.size() * sizeof(uint16_t));
    ape.upload(c.ape.data(), c.ape.size() * sizeof(uint16_t));
    DeviceBuffer pooled(c.pooled.size() * sizeof(float) + 4);
    const int32_t n = ds4::cuda::compressor_tokens(st, kv_in, score_in, ape, r.T, r.pos0, pooled);
    const std::string where =
        "ratio " + std::to_string(r.ratio) + ", pos0 " + std::to_string(r.pos0) + ", T " + std::to_string(r.T);
    EXPECT_EQ(size_t(n) * r.hd, c.pooled.size()) << where;
    EXPECT_EQ(first_difference(download(pooled, c.pooled.size()), c.pooled), "") << where;
    std::vector<float> kv(st.floats()), score(st.floats());
    st.download(kv.data(), score.data());
    EXPECT_EQ(first_difference(kv, c.want.kv), "") << "state kv: " << where;
    EXPECT_EQ(first_difference(score, c.want.score), "") << "state score: " << where;
  }
}

TEST(KvGpu, CompressedRowFinishMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  for (const CaseFormat fmt : {CaseFormat::Fp8, CaseFormat::Fp4Hadamard}) {
    const uint32_t dim = fmt == CaseFormat::Fp8 ? 512 : 128, n = 9;
    const FinishCase c = make_finish_case(rng, n, dim, 64, fmt);
    auto rows = upload(c.rows);
    const auto w = upload(c.norm_w), cs = upload(c.cs);
    DeviceBuffer store(size_t(n) * dim * sizeof(float));
    const DeviceBuffer dst = addresses(store, n, dim);
    ds4::cuda::compressed_rows_finish(rows, int32_t(n), int32_t(dim), w, 1e-6f, cs, 64, device_format(fmt), dst);
    EXPECT_EQ(first_difference(download(store, c.want.size()), c.want), "")
        << (fmt == CaseFormat::Fp8 ? "attention" : "indexer") << " rows";
  }
}

TEST(KvGpu, IndexerSelectionMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  struct Sel {
    uint32_t n, top_k, n_head;
    int kind;
  };
  for (const Sel s : {Sel{511, 512, 64, 0}, Sel{512, 512, 64, 0}, Sel{513, 512, 64, 0}, Sel{3000, 512, 64, 1},
                      Sel{2000, 512, 8, 2}, Sel{40, 12, 4, 1}, Sel{6000, 512, 8, 1}, Sel{5000, 512, 2, 2}}) {
    if (on_emulator() && s.n > 200) continue;  // one fiber per CUDA thread: the small cases only
    const IndexerCase c = make_indexer_case(rng, s.n, s.top_k, s.n_head, s.kind);
    const uint32_t comp_dim = 512, raw = 128;
    const auto q = upload(c.q), w = upload(c.w), rows = upload(c.rows);
    DeviceBuffer comp(size_t(s.n) * comp_dim * sizeof(float)), scores(s.n * sizeof(float)), mask(s.n),
        visible(sizeof(uint64_t) * (raw + s.n)), count(sizeof(int32_t));
    ds4::cuda::indexer_select(q, w, int32_t(s.n_head), int32_t(c.dim), c.wscale, rows, int32_t(s.n), int32_t(s.top_k),
                              scores, mask, comp, int32_t(comp_dim), visible, int32_t(raw), count);
    const std::string where =
        "n " + std::to_string(s.n) + ", top_k " + std::to_string(s.top_k) + ", kind " + std::to_string(s.kind);
    std::vector<uint8_t> got(s.n);
    mask.download(got.data(), s.n);
    EXPECT_EQ(got, c.want) << where;
    if (s.n > s.top_k) {
      EXPECT_EQ(first_difference(download(scores, s.n), c.scores), "") << "scores: " << where;
    }
    std::vector<uint64_t> want_visible;
    for (uint32_t r = 0; r < s.n; r++)
      if (c.want[r]) want_visible.push_back(comp.ptr() + uint64_t(r) * comp_dim * sizeof(float));
    int32_t n_visible = -1;
    count.download(&n_visible, sizeof n_visible);
    EXPECT_EQ(n_visible, int32_t(want_visible.size())) << where;
    std::vector<uint64_t> got_visible(want_visible.size());
    visible.download(got_visible.data(), got_visible.size() * sizeof(uint64_t), raw * sizeof(uint64_t));
    EXPECT_EQ(got_visible, want_visible) << where;
  }
  // Every row visible (ratio-128 layers): no mask.
  DeviceBuffer comp(5 * 8 * sizeof(float)), visible(7 * sizeof(uint64_t)), count(sizeof(int32_t));
  ds4::cuda::visible_rows_all(comp, 5, 8, visible, 2, count);
  std::vector<uint64_t> got(5);
  visible.download(got.data(), 5 * sizeof(uint64_t), 2 * sizeof(uint64_t));
  for (uint64_t r = 0; r < 5; r++) EXPECT_EQ(got[r], comp.ptr() + r * 8 * sizeof(float)) << "row " << r;
  int32_t n = -1;
  count.download(&n, sizeof n);
  EXPECT_EQ(n, 5);
}

// Several rows' choices in one batched launch (indexer_select_rows, docs/cuda.md §attention-rows):
// each row's list and count as the CPU chooses, with the rows' indexer stores apart and the lists
// at offsets past each row's raw window in one array. The emulator takes the small cases.
TEST(KvGpu, BatchedIndexerSelectionMatchesTheCpuPerRow) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(31);
  const uint32_t comp_dim = 512, raw = 5, top_k = 12, n_head = 4;
  const std::vector<uint32_t> ns =
      on_emulator() ? std::vector<uint32_t>{40, 13, 70} : std::vector<uint32_t>{40, 13, 70, 3000, 6000, 600};
  std::vector<IndexerCase> cases;
  std::vector<DeviceBuffer> qs, ws, rows, comps;
  std::vector<ds4::cuda::IndexerChoice> choices;
  const uint32_t room = raw + top_k;  // each row's list: its raw window, then its choice
  DeviceBuffer lists(sizeof(uint64_t) * room * ns.size() + sizeof(uint64_t) * 6000),
      counts(sizeof(int32_t) * ns.size());
  int64_t total = 0;
  for (size_t r = 0; r < ns.size(); r++) {
    cases.push_back(make_indexer_case(rng, ns[r], top_k, n_head, int(r % 3)));
    qs.push_back(upload(cases[r].q));
    ws.push_back(upload(cases[r].w));
    rows.push_back(upload(cases[r].rows));
    comps.emplace_back(size_t(ns[r]) * comp_dim * sizeof(float));
    choices.push_back({qs[r].ptr(), ws[r].ptr(), rows[r].ptr(), comps[r].ptr(),
                       lists.ptr() + (r * room + raw) * sizeof(uint64_t), counts.ptr() + r * sizeof(int32_t),
                       int32_t(ns[r]), int32_t(total)});
    total += ns[r];
  }
  DeviceBuffer table(choices.size() * sizeof(ds4::cuda::IndexerChoice)), scores(size_t(total) * sizeof(float)),
      mask(static_cast<size_t>(total));
  table.upload(choices.data(), table.bytes());
  ds4::cuda::indexer_select_rows(table, int32_t(ns.size()), total, int32_t(n_head), int32_t(cases[0].dim),
                                 cases[0].wscale, int32_t(top_k), int32_t(comp_dim), scores, mask);
  std::vector<int32_t> got_counts(ns.size());
  counts.download(got_counts.data(), got_counts.size() * sizeof(int32_t));
  for (size_t r = 0; r < ns.size(); r++) {
    std::vector<uint64_t> want;
    for (uint32_t c = 0; c < ns[r]; c++)
      if (cases[r].want[c]) want.push_back(comps[r].ptr() + uint64_t(c) * comp_dim * sizeof(float));
    ASSERT_EQ(got_counts[r], int32_t(want.size())) << "row " << r << " of " << ns[r] << " indexer rows";
    std::vector<uint64_t> got(want.size());
    lists.download(got.data(), got.size() * sizeof(uint64_t), (r * room + raw) * sizeof(uint64_t));
    EXPECT_EQ(got, want) << "row " << r << " of " << ns[r] << " indexer rows";
  }
  EXPECT_THROW(
      ds4::cuda::indexer_select_rows(table, int32_t(ns.size()), total, int32_t(n_head), int32_t(cases[0].dim),
                                     cases[0].wscale, int32_t(top_k), int32_t(comp_dim), scores, DeviceBuffer(8)),
      std::invalid_argument);  // the mask too small
}

}  // namespace
