// The real device kernels of the residual stream (engine/cuda/kernels/{embed,hyper_connection}.cuh)
// run on the CPU by the CUDA-thread emulator with the launch shapes of engine/cuda/{embed,
// hyper_connection}.cpp, against the CPU's Fast functions bit for bit: the embedding (with an
// out-of-range id), HC pre (Sinkhorn split + weighted sum), HC post and the output head's stream
// collapse. n_hc 4 (DS4's), 1, 3 and 16; widths below, at and above a block of 256 threads; one
// and three blocks a row.
#include "tests/engine/cuda/cuda_emulator.hpp"
// The kernels, after the emulator's definitions.
#include "engine/cuda/kernels/embed.cuh"
#include "engine/cuda/kernels/hyper_connection.cuh"
//
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/hc_cases.hpp"

namespace {
using namespace ds4::cuda::test;
namespace emu = ds4::cuda::emu;

TEST(EmulatedResidual, HcPrePostAndHeadMatchTheCpu) {
  std::mt19937 rng(30);
  struct Shape {
    int64_t T;
    uint32_t n_hc, n_embd;
  };
  for (const Shape& s : {Shape{3, 4, 300}, Shape{1, 4, 64}, Shape{2, 1, 33}, Shape{2, 3, 257}, Shape{1, 16, 40}}) {
    const HcCase c = make_hc_case(rng, s.T, s.n_hc, s.n_embd);
    const auto where =
        "T " + std::to_string(s.T) + ", n_hc " + std::to_string(s.n_hc) + ", n_embd " + std::to_string(s.n_embd);
    const int64_t D = s.n_embd;
    const auto n = int32_t(s.n_hc);
    for (int32_t parts : {1, 3}) {  // blocks per row: 3 leaves some with no element at n_embd 33 and 64
      std::vector<float> split(c.split.size()), x(c.x.size()), post_H(c.post_H.size()), head_y(c.head_y.size());
      const auto at = where + ", " + std::to_string(parts) + " blocks a row";
      emu::launch(unsigned(s.T * parts), 256, 0, [&] {
        ds4_hc_pre(c.H.data(), c.mix.data(), c.scale.data(), c.base.data(), n, int32_t(c.iters), c.eps, D, parts,
                   split.data(), x.data());
      });
      EXPECT_EQ(first_difference(split, c.split), "") << "split, " << at;
      EXPECT_EQ(first_difference(x, c.x), "") << "x, " << at;
      emu::launch(unsigned(s.T * s.n_hc * parts), 256, 0,
                  [&] { ds4_hc_post(c.y.data(), c.H.data(), split.data(), n, D, parts, post_H.data()); });
      EXPECT_EQ(first_difference(post_H, c.post_H), "") << "post, " << at;
      emu::launch(unsigned(s.T * parts), 256, 0, [&] {
        ds4_hc_head(c.head_pre.data(), c.head_scale.data(), c.head_base.data(), c.H.data(), n, c.eps, D, parts,
                    head_y.data());
      });
      EXPECT_EQ(first_difference(head_y, c.head_y), "") << "head, " << at;
    }
  }
}

TEST(EmulatedResidual, EmbeddingMatchesTheCpuAndFlagsBadIds) {
  std::mt19937 rng(30);
  constexpr int64_t kVocab = 37;
  for (uint32_t n_embd : {300u, 8u})
    for (uint32_t n_hc : {4u, 1u}) {
      const auto table = random_halves(rng, size_t(kVocab) * n_embd);
      const std::vector<int32_t> ids = {5, 0, 36, 5};
      const auto want = embed_reference(table, ids, n_embd, n_hc);
      std::vector<float> got(want.size(), 7.0f);
      int32_t error = 0;
      emu::launch(unsigned(ids.size()), 256, 0,
                  [&] { ds4_embed(ids.data(), table.data(), kVocab, n_embd, int32_t(n_hc), got.data(), &error); });
      EXPECT_EQ(first_difference(got, want), "") << "n_embd " << n_embd << ", n_hc " << n_hc;
      EXPECT_EQ(error, 0);

      const std::vector<int32_t> bad = {3, -1, int32_t(kVocab)};
      std::vector<float> H(bad.size() * n_hc * n_embd, 7.0f);
      emu::launch(unsigned(bad.size()), 256, 0,
                  [&] { ds4_embed(bad.data(), table.data(), kVocab, n_embd, int32_t(n_hc), H.data(), &error); });
      EXPECT_EQ(error, 1) << "an id outside the vocabulary is flagged";
      const size_t row = size_t(n_hc) * n_embd;
      const auto first = embed_reference(table, {3}, n_embd, n_hc);
      EXPECT_EQ(first_difference(std::vector<float>(H.begin(), H.begin() + row), first), "");
      EXPECT_EQ(first_difference(std::vector<float>(H.begin() + row, H.end()), std::vector<float>(2 * row, 0.0f)), "")
          << "the bad ids' rows are zeroed";
    }
}

}  // namespace
