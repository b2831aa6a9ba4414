// The real device kernels of RMSNorm, sink attention, RoPE, the elementwise functions and the
// bandwidth probe's copy (engine/cuda/kernels/*.cuh), run on the CPU by the CUDA-thread emulator (cuda_emulator.hpp)
// with the launch shapes of engine/cuda/*.cpp, against the CPU's Fast functions bit for bit
// (docs/arithmetic.md): the parallel decomposition is checked here on every machine, the device's
// own rounding only where cuda_gpu_tests find a GPU. Shapes are small (one fiber per CUDA thread)
// but keep the tails: rows not multiples of 8, several tiles of attention's pass 2, 1..3 heads.
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/attention.cuh"
#include "engine/cuda/kernels/elementwise.cuh"
#include "engine/cuda/kernels/rms_norm.cuh"
#include "engine/cuda/kernels/rope.cuh"
#include "engine/cuda/kernels/stream_copy.cuh"
//
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/model/rope.hpp"
#include "engine/quant/fast_math.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/stage_cases.hpp"

namespace {
using namespace ds4::cuda::test;
namespace emu = ds4::cuda::emu;

TEST(EmulatedKernels, RmsNormMatchesTheCpuFastOrder) {
  std::mt19937 rng(30);
  ds4::model::Exec ex;
  ex.exact = false;
  ex.isa = ds4::quant::best_isa();
  for (int64_t n : {512, 100, 33, 8, 1})
    for (int64_t rows : {1, 3}) {
      const auto x = randn(rng, size_t(rows * n), 2.0f), w = randn(rng, size_t(n), 1.0f);
      std::vector<float> want(x.size()), want_nw(x.size()), got(x.size()), got_nw = x;
      for (int64_t t = 0; t < rows; t++) {
        ds4::model::rms_norm(ex, want.data() + t * n, x.data() + t * n, w.data(), uint64_t(n), 1e-6f);
        ds4::model::rms_norm(ex, want_nw.data() + t * n, x.data() + t * n, nullptr, uint64_t(n), 1e-6f);
      }
      emu::launch(unsigned(rows), 256, 0, [&] { ds4_rms_norm(x.data(), w.data(), got.data(), n, 1e-6f); });
      emu::launch(unsigned(rows), 256, 0, [&] { ds4_rms_norm(got_nw.data(), nullptr, got_nw.data(), n, 1e-6f); });
      EXPECT_EQ(first_difference(got, want), "") << "n " << n << ", " << rows << " rows";
      EXPECT_EQ(first_difference(got_nw, want_nw), "") << "in place, no weight: n " << n << ", " << rows << " rows";
    }
}

TEST(EmulatedKernels, AttentionMatchesTheCpuFastOrder) {
  std::mt19937 rng(30);
  ds4::kernels::ThreadPool pool(1);
  // d = 64 and 96 with more rows than threads: several tiles of pass 2.
  const AttnShape shapes[] = {{512, 23, 17, 13, true},
                              {96, 40, 32, 150, false},
                              {64, 150, 100, 31, true},
                              {512, 0, 128, 0, false},
                              {96, 1, 128, 0, false}};
  for (const AttnShape& s : shapes)
    for (uint32_t H : {1u, 2u, 3u}) {
      const AttnCase c = make_attn_case(rng, s, H, pool);  // the ring wraps
      const ds4::model::LayerState& st = c.st;
      std::vector<float> got(c.want.size());

      // The launches of engine/cuda/attention.cpp.
      std::vector<const float*> rows;
      for (uint32_t r = 0; r < st.n_visible_raw(); r++) rows.push_back(st.visible_raw_row(r));
      for (uint32_t r = 0; r < s.n_comp; r++)
        if (c.allowed[r]) rows.push_back(st.comp.row(r));
      const int32_t n = int32_t(rows.size());
      std::vector<float> scores(size_t(n) * H + 1);
      const float scale = 1.0f / std::sqrt(float(s.d));
      if (n > 0)
        emu::launch(unsigned(n) * H, 256, 0,
                    [&] { ds4_attn_scores(c.q.data(), rows.data(), int32_t(H), int64_t(s.d), scale, scores.data()); });
      const unsigned threads = (s.d + 31) / 32 * 32;
      emu::launch(H, threads, threads * sizeof(float), [&] {
        ds4_attn_combine(scores.data(), rows.data(), n, int32_t(H), int32_t(s.d), c.sinks.data(), got.data());
      });
      EXPECT_EQ(first_difference(got, c.want), "") << "d " << s.d << ", " << n << " rows, " << H << " heads";
    }
}

TEST(EmulatedKernels, RopeMatchesTheCpuRotation) {
  std::mt19937 rng(30);
  for_each_rope_case(rng, [](const RopeCase& c) {
    std::vector<float> got = c.x;
    const int64_t pairs = c.T * c.H * (c.n_rot / 2);  // engine/cuda/rope.cpp: one thread a pair, 256 a block
    emu::launch(unsigned((pairs + 255) / 256), 256, 0,
                [&] { ds4_rope(got.data(), c.cs.data(), c.T, int32_t(c.H), int32_t(c.head_dim), int32_t(c.n_rot)); });
    EXPECT_EQ(first_difference(got, c.want), "") << "head_dim " << c.head_dim << ", layer " << c.layer
                                                 << (c.inverse ? ", inverse" : "") << ", " << c.H << " heads";
  });
}

TEST(EmulatedKernels, ElementwiseDispatchesTheCpuFunctions) {
  namespace fast = ds4::quant::fast;
  std::vector<float> in;
  for (int i = -3000; i <= 3000; i++) in.push_back(float(i) * 0.04f + 1e-3f);  // [-120, 120], not a block multiple
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 1e-30f,
                  -1e-30f, 88.7228394f, -103.97f, 20.0f, -20.0f})
    in.push_back(x);
  const int64_t n = int64_t(in.size());
  float (*const host[])(float) = {fast::exp, fast::sigmoid, fast::sigmoid_stable, fast::silu, fast::softplus};
  for (int32_t op = 0; op < 5; op++) {
    std::vector<float> want(in.size()), got(in.size());
    for (size_t i = 0; i < in.size(); i++) want[i] = host[op](in[i]);
    emu::launch(unsigned((n + 255) / 256), 256, 0, [&] { ds4_elementwise(op, in.data(), got.data(), n); });
    EXPECT_EQ(first_difference(got, want), "") << "op " << op;
  }
}

// A grid smaller than the words: the grid-stride loop covers them all, and nothing past them.
TEST(EmulatedKernels, StreamCopyCoversEveryWord) {
  for (uint64_t n : {1u, 37u, 1000u}) {
    std::vector<uint4> src(n + 1), dst(n + 1, uint4{7, 7, 7, 7});
    for (uint64_t i = 0; i <= n; i++) src[i] = {unsigned(i), unsigned(2 * i), unsigned(3 * i), unsigned(~i)};
    emu::launch(3, 64, 0, [&] { ds4_stream_copy(src.data(), dst.data(), n); });
    for (uint64_t i = 0; i < n; i++) ASSERT_EQ(std::memcmp(&dst[i], &src[i], sizeof(uint4)), 0) << "word " << i;
    EXPECT_EQ(dst[n].x, 7u) << "copied past the end";
  }
}

}  // namespace
