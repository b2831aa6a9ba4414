// The attention layer's stateful KV kernels (engine/cuda/kernels/{kv_format,compressor,indexer}.cuh)
// run on the CPU by the CUDA-thread emulator with the launch shapes of engine/cuda/{kv_format,
// compressor,indexer}.cpp, against the CPU's Fast functions bit for bit: the raw row into its ring
// slot, the KV-format simulations, the compressor from random states across window ends and the
// ratio-4 roll, the compressed-row finish, and the indexer's scores, top-k and visible row list
// with n around top_k, ties and unselectable rows; then all of them wired as forward.cpp wires them
// (with the RoPE and attention kernels) over a token sequence. Also kv_sim's ceil(log2f).
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/attention.cuh"
#include "engine/cuda/kernels/compressor.cuh"
#include "engine/cuda/kernels/indexer.cuh"
#include "engine/cuda/kernels/kv_format.cuh"
#include "engine/cuda/kernels/rms_norm.cuh"
#include "engine/cuda/kernels/rope.cuh"
//
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/quant/kv_sim.hpp"
#include "tests/engine/cuda/kv_cases.hpp"

namespace {
using namespace ds4::cuda::test;
namespace emu = ds4::cuda::emu;
namespace stages = ds4::cuda::stages;

unsigned warp_round(uint32_t n) { return (n + 31) / 32 * 32; }

// The launch of kv_format.cpp.
void format_rows(float* x, float* const* dst, uint32_t rows, uint32_t dim, uint32_t n_rot, CaseFormat fmt, bool rnd) {
  const int32_t f = fmt == CaseFormat::Fp8 ? stages::kKvFormatFp8 : stages::kKvFormatFp4Hadamard;
  emu::launch(rows, warp_round(dim), 0, [&] { ds4_kv_format(x, dst, int32_t(dim), int32_t(n_rot), f, rnd ? 1 : 0); });
}

TEST(EmulatedKv, CeilLog2MatchesGlibc) {
  std::mt19937 rng(30);
  for (int i = 0; i < 200000; i++) {
    uint32_t u = rng() & 0x7fffffffu;
    if (i % 2) u = (u & 0x7f800000u) | (rng() % 64);  // just above a power of two: the hard cases
    if (u == 0 || u >= 0x7f800000u) continue;
    float r;
    std::memcpy(&r, &u, 4);
    ASSERT_EQ(ds4::quant::kvsim::ceil_log2f(r), int(std::ceil(std::log2(r)))) << "bits " << std::hex << u;
  }
}

TEST(EmulatedKv, FormatsMatchTheCpu) {
  std::mt19937 rng(30);
  struct Shape {
    uint32_t dim, n_rot;
    CaseFormat fmt;
  };
  for (const Shape s : {Shape{512, 64, CaseFormat::Fp8}, Shape{128, 64, CaseFormat::Fp8}, Shape{64, 0, CaseFormat::Fp8},
                        Shape{128, 64, CaseFormat::Fp4Hadamard}})
    for (int kind = 0; kind < 4; kind++)
      for (const bool rnd : {false, true}) {
        const uint32_t rows = 3;
        const auto x = kv_values(rng, size_t(rows) * s.dim, kind);
        const auto want = kv_format_want(x, rows, s.dim, s.n_rot, s.fmt, rnd);
        auto in_place = x;
        format_rows(in_place.data(), nullptr, rows, s.dim, s.n_rot, s.fmt, rnd);
        EXPECT_EQ(first_difference(in_place, want), "") << "dim " << s.dim << ", kind " << kind << ", f16 " << rnd;
        // To addresses in reverse order, the input left alone.
        auto src = x;
        std::vector<float> out(x.size());
        std::vector<float*> dst;
        for (uint32_t t = 0; t < rows; t++) dst.push_back(out.data() + size_t(rows - 1 - t) * s.dim);
        format_rows(src.data(), dst.data(), rows, s.dim, s.n_rot, s.fmt, rnd);
        std::vector<float> back(x.size());
        for (uint32_t t = 0; t < rows; t++) std::memcpy(back.data() + size_t(t) * s.dim, dst[t], s.dim * sizeof(float));
        EXPECT_EQ(first_difference(back, want), "") << "to addresses: dim " << s.dim << ", kind " << kind;
        EXPECT_EQ(first_difference(src, x), "") << "the input changed";
      }
}

TEST(EmulatedKv, RawRowsGoToTheirRingSlots) {
  std::mt19937 rng(30);
  const uint32_t hd = 128, n_rot = 64;
  ds4::model::LayerState cpu, dev;  // the CPU ring, and the one the kernel writes through addresses
  for (auto* st : {&cpu, &dev}) {
    st->head_dim = hd;
    st->raw_cap = 5;
    st->raw_window = 4;
    st->raw.assign(size_t(st->raw_cap) * hd, 0.0f);
  }
  for (uint32_t T : {3u, 4u, 1u}) {  // 8 rows into a ring of 5: wraps
    const auto kv = kv_values(rng, size_t(T) * hd, int(T % 3));
    auto kv_cpu = kv, kv_dev = kv;
    std::vector<float*> slots;
    for (uint32_t t = 0; t < T; t++) {
      float* r = kv_cpu.data() + size_t(t) * hd;  // forward.cpp's raw-row steps
      ds4::model::fp8_kv_row_inplace(r, hd, n_rot);
      float* slot = cpu.push_raw_slot();
      for (uint32_t i = 0; i < hd; i++) slot[i] = ds4::model::round_f16(r[i]);
      slots.push_back(dev.push_raw_slot());
    }
    format_rows(kv_dev.data(), slots.data(), T, hd, n_rot, CaseFormat::Fp8, true);
    EXPECT_EQ(first_difference(dev.raw, cpu.raw), "") << T << " rows";
  }
}

TEST(EmulatedKv, CompressorMatchesTheCpu) {
  std::mt19937 rng(30);
  struct Run {
    uint32_t ratio, hd, pos0;
    int32_t T;
  };
  // Window ends at the first, a middle and the last token; the very first window (rows still at
  // -1e30); ratio 128 across one end.
  for (const Run r :
       {Run{4, 64, 3, 1}, Run{4, 64, 7, 9}, Run{4, 64, 0, 6}, Run{4, 96, 10, 2}, Run{4, 64, 13, 3}, Run{4, 512, 6, 5},
        Run{128, 128, 120, 9}, Run{128, 32, 250, 10}, Run{128, 32, 0, 5}, Run{128, 32, 127, 1}}) {
    const CompressorCase c = make_compressor_case(rng, r.ratio, r.hd, r.pos0, r.T);
    ds4::model::CompressorState st = c.start;
    std::vector<float> pooled(c.pooled.size() + 1, -7.0f);
    emu::launch((r.hd + 127) / 128, 128, 0, [&] {
      ds4_compressor(st.kv.data(), st.score.data(), c.kv_in.data(), c.score_in.data(), c.ape.data(), int32_t(r.ratio),
                     int32_t(r.hd), r.T, r.pos0, pooled.data());
    });
    pooled.pop_back();
    const std::string where =
        "ratio " + std::to_string(r.ratio) + ", pos0 " + std::to_string(r.pos0) + ", T " + std::to_string(r.T);
    EXPECT_EQ(first_difference(pooled, c.pooled), "") << where;
    EXPECT_EQ(first_difference(st.kv, c.want.kv), "") << "state kv: " << where;
    EXPECT_EQ(first_difference(st.score, c.want.score), "") << "state score: " << where;
  }
}

TEST(EmulatedKv, CompressedRowFinishMatchesTheCpu) {
  std::mt19937 rng(30);
  for (const CaseFormat fmt : {CaseFormat::Fp8, CaseFormat::Fp4Hadamard}) {
    const uint32_t dim = fmt == CaseFormat::Fp8 ? 512 : 128;
    FinishCase c = make_finish_case(rng, 3, dim, 64, fmt);
    std::vector<float> store(size_t(c.n + 1) * dim, -7.0f);  // appended after one earlier row
    std::vector<float*> dst;
    for (uint32_t i = 0; i < c.n; i++) dst.push_back(store.data() + size_t(i + 1) * dim);
    // compressor.cpp's launches: rms_norm, rope, kv_format.
    emu::launch(c.n, 256, 0, [&] { ds4_rms_norm(c.rows.data(), c.norm_w.data(), c.rows.data(), dim, 1e-6f); });
    const int64_t pairs = int64_t(c.n) * (c.n_rot / 2);
    emu::launch(unsigned((pairs + 255) / 256), 256, 0,
                [&] { ds4_rope(c.rows.data(), c.cs.data(), c.n, 1, int32_t(dim), int32_t(c.n_rot)); });
    format_rows(c.rows.data(), dst.data(), c.n, dim, c.n_rot, fmt, true);
    const std::vector<float> got(store.begin() + dim, store.end());
    EXPECT_EQ(first_difference(got, c.want), "") << (fmt == CaseFormat::Fp8 ? "attention" : "indexer") << " rows";
  }
}

TEST(EmulatedKv, IndexerSelectionMatchesTheCpu) {
  std::mt19937 rng(30);
  struct Sel {
    uint32_t n, top_k, n_head;
    int kind;
  };
  for (const Sel s : {Sel{11, 12, 2, 0}, Sel{12, 12, 2, 0}, Sel{13, 12, 3, 0}, Sel{40, 12, 4, 1}, Sel{300, 7, 1, 1},
                      Sel{33, 16, 2, 2}, Sel{9, 0, 1, 0}, Sel{40, 12, 64, 1}, Sel{20, 4, 9, 0}}) {
    const IndexerCase c = make_indexer_case(rng, s.n, s.top_k, s.n_head, s.kind);
    const uint32_t comp_dim = 64, raw = 3;
    const std::vector<float> comp(size_t(s.n) * comp_dim);  // the attention rows the list points at
    std::vector<float> scores(s.n);
    std::vector<uint8_t> mask(s.n, 9);
    std::vector<const float*> visible(raw + s.n, nullptr);
    int32_t count = -1;
    const int32_t n = int32_t(s.n), top_k = int32_t(s.top_k), all = s.n > s.top_k ? 0 : 1;
    if (!all) {  // indexer.cpp's launches
      emu::launch(s.n, stages::kDotThreads, 0, [&] {
        ds4_indexer_scores(c.q.data(), c.w.data(), int32_t(s.n_head), int32_t(c.dim), c.wscale, c.rows.data(),
                           scores.data());
      });
      emu::launch((s.n + 255) / 256, stages::kTopkThreads, 0,
                  [&] { ds4_indexer_topk(scores.data(), n, top_k, mask.data()); });
    }
    emu::launch(1, stages::kCompactThreads, 0, [&] {
      ds4_indexer_compact(mask.data(), n, top_k, all, comp.data(), comp_dim, visible.data() + raw, &count);
    });
    const std::string where =
        "n " + std::to_string(s.n) + ", top_k " + std::to_string(s.top_k) + ", kind " + std::to_string(s.kind);
    EXPECT_EQ(mask, c.want) << where;
    if (!all) {
      EXPECT_EQ(first_difference(scores, c.scores), "") << "scores: " << where;
    }
    std::vector<const float*> want_visible(raw, nullptr);
    for (uint32_t r = 0; r < s.n; r++)
      if (c.want[r]) want_visible.push_back(comp.data() + size_t(r) * comp_dim);
    EXPECT_EQ(count, int32_t(want_visible.size() - raw)) << where;
    visible.resize(want_visible.size());
    EXPECT_EQ(visible, want_visible) << where;
    if (!all) {  // the long-context selection, then the compaction
      std::vector<uint8_t> radix(s.n, 9);
      emu::launch(1, stages::kCompactThreads, 0,
                  [&] { ds4_indexer_topk_radix(scores.data(), n, top_k, radix.data()); });
      emu::launch(1, stages::kCompactThreads, 0, [&] {
        ds4_indexer_compact(radix.data(), n, top_k, 0, comp.data(), comp_dim, visible.data() + raw, &count);
      });
      EXPECT_EQ(radix, c.want) << "radix: " << where;
    }
  }
  // visible_rows_all: no mask, every row.
  const std::vector<float> comp(5 * 8);
  std::vector<const float*> visible(7, nullptr);
  int32_t count = -1;
  emu::launch(1, stages::kCompactThreads, 0,
              [&] { ds4_indexer_compact(nullptr, 5, 5, 1, comp.data(), 8, visible.data() + 2, &count); });
  EXPECT_EQ(count, 5);
  for (int r = 0; r < 5; r++) EXPECT_EQ(visible[2 + r], comp.data() + r * 8) << "row " << r;
}

}  // namespace

// The radix selection gives the rank selection's mask on score arrays full of ties (few distinct
// values, -0 and +0), NaN and scores at or below -1e30, for n up to 2500 and top_k from 0 to n - 1.
TEST(EmulatedKv, RadixTopkMatchesTheRankTopk) {
  std::mt19937 rng(30);
  const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), -1.0e30f, -2.0e30f, 1.5f, -1.5f};
  for (int32_t n : {700, 2500})
    for (int32_t top_k : {0, 1, 512, n - 1})
      for (int kind = 0; kind < 2; kind++) {
        std::vector<float> scores = randn(rng, size_t(n), 1.0f);
        for (float& x : scores)
          if (kind == 1 || rng() % 4 == 0) x = special[rng() % 7];
        std::vector<uint8_t> rank(size_t(n), 9), radix(size_t(n), 9);
        emu::launch(unsigned((n + 255) / 256), stages::kTopkThreads, 0,
                    [&] { ds4_indexer_topk(scores.data(), n, top_k, rank.data()); });
        emu::launch(1, stages::kCompactThreads, 0,
                    [&] { ds4_indexer_topk_radix(scores.data(), n, top_k, radix.data()); });
        EXPECT_EQ(radix, rank) << "n " << n << ", top_k " << top_k << ", kind " << kind;
      }
}

namespace {

// forward.cpp's stateful attention steps of one ratio-4 layer, token by token, on the CPU (Fast)
// and through the kernels (RoPE, raw row to its slot, both compressors, the finish into the
// stores, the indexer, the attention over the listed rows): the heads of every token, the raw
// ring and both compressed stores must agree bit for bit. Small widths, a ring that wraps, and
// more indexer rows than top_k from token 16 on.
TEST(EmulatedKv, LayerSequenceMatchesTheCpu) {
  namespace model = ds4::model;
  std::mt19937 rng(30);
  const uint32_t hd = 128, n_rot = 64, H = 2, ratio = 4, id = 128, IH = 4, top_k = 3, tokens = 22, cap = 16;
  const float eps = 1e-6f;
  const model::RopeParams rope = model::rope_params_for_layer(rope_config(hd, n_rot), 1);
  ds4::kernels::ThreadPool pool(1);
  ds4::quant::Isa isa = ds4::quant::best_isa();
  model::Exec ex;
  ex.exact = false;
  ex.isa = isa;
  model::LayerState cpu, dev;  // dev: the ring bookkeeping of the device side (its data is the device's)
  for (auto* st : {&cpu, &dev}) {
    st->ratio = ratio;
    st->head_dim = hd;
    st->raw_window = 6;
    st->raw_cap = 8;
    st->raw.assign(size_t(st->raw_cap) * hd, 0.0f);
    st->comp.init(hd, cap);
    st->attn_cmp.init(ratio, hd);
    st->index_comp.init(id, cap);
    st->index_cmp.init(ratio, id);
  }
  std::vector<float> dev_comp(size_t(cap) * hd), dev_index(size_t(cap) * id);  // fixed device stores
  uint32_t n_comp = 0;
  const auto f16_rows = [&](size_t n) {
    std::vector<uint16_t> v;
    for (float x : randn(rng, n, 0.5f)) v.push_back(model::f32_to_f16(x));
    return v;
  };
  const auto ape_attn = f16_rows(size_t(ratio) * 2 * hd), ape_index = f16_rows(size_t(ratio) * 2 * id);
  const auto norm_attn = randn(rng, hd, 1.0f), norm_index = randn(rng, id, 1.0f), sinks = randn(rng, H, 1.0f);
  const float wscale = 1.0f / std::sqrt(float(id * IH));
  std::vector<float> pooled(hd), cs(n_rot), cs_comp(n_rot), scores(cap), heads_cpu(H * hd), heads_dev(H * hd);
  std::vector<uint8_t> allowed, mask(cap);
  for (uint32_t pos = 0; pos < tokens; pos++) {
    const auto q = randn(rng, H * hd, 1.0f), kv = randn(rng, hd, 1.0f), ckv = randn(rng, 2 * hd, 1.0f),
               csc = randn(rng, 2 * hd, 2.0f), ikv = randn(rng, 2 * id, 1.0f), isc = randn(rng, 2 * id, 2.0f),
               iq = randn(rng, IH * id, 1.0f), iw = randn(rng, IH, 1.0f);
    model::rope_angles(rope, pos, false, false, cs.data());
    if ((pos + 1) % ratio == 0) model::rope_angles(rope, pos + 1 - ratio, false, false, cs_comp.data());
    // The CPU, as forward.cpp's attention_sublayer.
    {
      auto qc = q, kvc = kv, iqc = iq, iwc = iw;
      model::rope_apply(qc.data(), H, hd, n_rot, cs.data());
      model::rope_apply(kvc.data(), 1, hd, n_rot, cs.data());
      model::fp8_kv_row_inplace(kvc.data(), hd, n_rot);
      float* slot = cpu.push_raw_slot();
      for (uint32_t i = 0; i < hd; i++) slot[i] = model::round_f16(kvc[i]);
      const auto compress = [&](model::CompressorState& st, model::RowStore& rows, const float* k, const float* s,
                                const std::vector<uint16_t>& ape, const std::vector<float>& nw, uint32_t dim,
                                model::CompressedRowKind kind) {
        if (!model::compressor_store(st, k, s, ape.data(), pos)) return;
        model::compressor_pool(st, false, pooled.data());
        model::compressed_row_finish(ex, pooled.data(), dim, nw.data(), eps, rope, pos + 1 - ratio, kind);
        std::memcpy(rows.append(), pooled.data(), dim * sizeof(float));
      };
      compress(cpu.attn_cmp, cpu.comp, ckv.data(), csc.data(), ape_attn, norm_attn, hd,
               model::CompressedRowKind::Attention);
      compress(cpu.index_cmp, cpu.index_comp, ikv.data(), isc.data(), ape_index, norm_index, id,
               model::CompressedRowKind::Indexer);
      const uint8_t* allow = nullptr;
      if (cpu.index_comp.n > 0) {
        if (cpu.index_comp.n > top_k) {
          model::rope_apply(iqc.data(), IH, id, n_rot, cs.data());
          for (uint32_t h = 0; h < IH; h++) model::indexer_qat_row_inplace(iqc.data() + h * id, id);
          for (float& w : iwc) w *= wscale;
        }
        std::vector<float> sc;
        model::indexer_select(iqc.data(), iwc.data(), IH, cpu.index_comp, top_k, false, isa, allowed, sc);
        allow = allowed.data();
      }
      model::attend_fast(cpu, qc.data(), H, sinks.data(), allow, isa, pool, heads_cpu.data());
    }
    // The kernels, with the launch shapes of the launchers.
    {
      auto qd = q, kvd = kv, iqd = iq;
      emu::launch(1, 256, 0, [&] { ds4_rope(qd.data(), cs.data(), 1, H, hd, n_rot); });
      emu::launch(1, 256, 0, [&] { ds4_rope(kvd.data(), cs.data(), 1, 1, hd, n_rot); });
      float* slot = dev.push_raw_slot();
      format_rows(kvd.data(), &slot, 1, hd, n_rot, CaseFormat::Fp8, true);
      const auto compress = [&](model::CompressorState& st, float* store, const std::vector<float>& k,
                                const std::vector<float>& s, const std::vector<uint16_t>& ape,
                                const std::vector<float>& nw, uint32_t dim, CaseFormat fmt) {
        emu::launch(unsigned((dim + 127) / 128), 128, 0, [&] {
          ds4_compressor(st.kv.data(), st.score.data(), k.data(), s.data(), ape.data(), ratio, dim, 1, pos,
                         pooled.data());
        });
        if ((pos + 1) % ratio != 0) return;
        emu::launch(1, 256, 0, [&] { ds4_rms_norm(pooled.data(), nw.data(), pooled.data(), dim, eps); });
        emu::launch(1, 256, 0, [&] { ds4_rope(pooled.data(), cs_comp.data(), 1, 1, dim, n_rot); });
        float* dst = store + size_t(n_comp) * dim;
        format_rows(pooled.data(), &dst, 1, dim, n_rot, fmt, true);
      };
      compress(dev.attn_cmp, dev_comp.data(), ckv, csc, ape_attn, norm_attn, hd, CaseFormat::Fp8);
      compress(dev.index_cmp, dev_index.data(), ikv, isc, ape_index, norm_index, id, CaseFormat::Fp4Hadamard);
      if ((pos + 1) % ratio == 0) n_comp++;
      std::vector<const float*> rows;
      for (uint32_t r = 0; r < dev.n_visible_raw(); r++) rows.push_back(dev.visible_raw_row(r));
      const size_t n_raw = rows.size();
      rows.resize(n_raw + n_comp);
      int32_t count = 0;
      const int32_t n = int32_t(n_comp), k = int32_t(top_k), all = n_comp > top_k ? 0 : 1;
      if (!all) {
        emu::launch(1, 256, 0, [&] { ds4_rope(iqd.data(), cs.data(), 1, IH, id, n_rot); });
        format_rows(iqd.data(), nullptr, IH, id, n_rot, CaseFormat::Fp4Hadamard, false);
        emu::launch(n_comp, stages::kDotThreads, 0, [&] {
          ds4_indexer_scores(iqd.data(), iw.data(), IH, id, wscale, dev_index.data(), scores.data());
        });
        emu::launch(1, stages::kTopkThreads, 0, [&] { ds4_indexer_topk(scores.data(), n, k, mask.data()); });
      }
      emu::launch(1, stages::kCompactThreads, 0, [&] {
        ds4_indexer_compact(mask.data(), n, k, all, dev_comp.data(), hd, rows.data() + n_raw, &count);
      });
      // As device_attention.cpp launches it: one query of a row table, the grid for every row the
      // count could allow, the count itself read by the kernels (blocks past it return).
      const size_t n_max = rows.size();
      std::vector<float> s(n_max * H + 1, std::nanf(""));
      const float scale = 1.0f / std::sqrt(float(hd));
      const int32_t first[2] = {0, int32_t(n_max)}, fixed = int32_t(n_raw);
      emu::launch(unsigned(n_max * H), 256, 0, [&] {
        ds4_attn_scores_rows(qd.data(), rows.data(), first, &fixed, &count, 1, H, hd, scale, s.data());
      });
      emu::launch(H, hd, hd * sizeof(float), [&] {
        ds4_attn_combine_rows(s.data(), rows.data(), first, &fixed, &count, H, hd, sinks.data(), heads_dev.data());
      });
      rows.resize(n_raw + size_t(count));
    }
    ASSERT_EQ(first_difference(heads_dev, heads_cpu), "") << "heads at position " << pos;
    ASSERT_EQ(first_difference(dev.raw, cpu.raw), "") << "raw ring at position " << pos;
  }
  ASSERT_EQ(cpu.comp.n, n_comp);
  EXPECT_EQ(first_difference(std::vector<float>(dev_comp.begin(), dev_comp.begin() + n_comp * hd),
                             std::vector<float>(cpu.comp.data.begin(), cpu.comp.data.begin() + n_comp * hd)),
            "");
  EXPECT_EQ(
      first_difference(std::vector<float>(dev_index.begin(), dev_index.begin() + n_comp * id),
                       std::vector<float>(cpu.index_comp.data.begin(), cpu.index_comp.data.begin() + n_comp * id)),
      "");
}

}  // namespace
