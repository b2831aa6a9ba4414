// The device's residual-stream kernels through their launchers (engine/cuda/{embed,
// hyper_connection}.cpp) against the CPU's Fast functions, bit for bit: embedding (and its error
// word), HC pre, HC post and the head's stream collapse at DS4's n_hc = 4 and width 4096, at
// 1..8, 64 and 300 tokens (a token's bits must not depend on the batch or the blocks a row the
// launcher picks), and at odd shapes. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/embed.hpp"
#include "engine/cuda/hyper_connection.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/hc_cases.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::cuda::DeviceBuffer;

TEST(HcGpu, PrePostAndHeadMatchTheCpuBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  struct Shape {
    int64_t T;
    uint32_t n_hc, n_embd;
  };
  for (const Shape& s : {Shape{1, 4, 4096}, Shape{5, 4, 4096}, Shape{8, 4, 4096}, Shape{64, 4, 4096},
                         Shape{300, 4, 4096}, Shape{3, 1, 33}, Shape{2, 3, 1000}, Shape{2, 16, 300}}) {
    const HcCase c = make_hc_case(rng, s.T, s.n_hc, s.n_embd);
    const auto where =
        "T " + std::to_string(s.T) + ", n_hc " + std::to_string(s.n_hc) + ", n_embd " + std::to_string(s.n_embd);
    auto H = upload(c.H), mix = upload(c.mix), scale = upload(c.scale), base = upload(c.base), y = upload(c.y);
    DeviceBuffer split(c.split.size() * sizeof(float)), x(c.x.size() * sizeof(float)),
        post_H(c.post_H.size() * sizeof(float)), head_y(c.head_y.size() * sizeof(float));
    ds4::cuda::hc_pre(H, mix, scale, base, s.T, s.n_hc, s.n_embd, int32_t(c.iters), c.eps, split, x);
    EXPECT_EQ(first_difference(download(split, c.split.size()), c.split), "") << "split, " << where;
    EXPECT_EQ(first_difference(download(x, c.x.size()), c.x), "") << "x, " << where;
    ds4::cuda::hc_post(y, H, split, s.T, s.n_hc, s.n_embd, post_H);
    EXPECT_EQ(first_difference(download(post_H, c.post_H.size()), c.post_H), "") << "post, " << where;
    auto pre = upload(c.head_pre), hscale = upload(c.head_scale), hbase = upload(c.head_base);
    ds4::cuda::hc_head_collapse(pre, hscale, hbase, H, s.T, s.n_hc, s.n_embd, c.eps, head_y);
    EXPECT_EQ(first_difference(download(head_y, c.head_y.size()), c.head_y), "") << "head, " << where;
  }
}

TEST(HcGpu, EmbeddingMatchesTheCpuAndFlagsBadIds) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  constexpr int64_t kVocab = 1000, kEmbd = 4096, kHc = 4;
  const auto table = random_halves(rng, size_t(kVocab) * kEmbd);
  DeviceBuffer dtable(table.size() * sizeof(uint16_t)), error(sizeof(int32_t));
  dtable.upload(table.data(), table.size() * sizeof(uint16_t));
  const int32_t zero = 0;
  error.upload(&zero, sizeof zero);
  std::vector<int32_t> ids;
  for (int i = 0; i < 9; i++) ids.push_back(int32_t(rng() % kVocab));
  ids.push_back(kVocab - 1);
  const auto want = embed_reference(table, ids, kEmbd, kHc);
  DeviceBuffer dids(ids.size() * sizeof(int32_t)), H(want.size() * sizeof(float));
  dids.upload(ids.data(), ids.size() * sizeof(int32_t));
  ds4::cuda::embed(dids, int64_t(ids.size()), dtable, kVocab, kEmbd, kHc, H, error);
  EXPECT_NO_THROW(ds4::cuda::check_embed_error(error));
  EXPECT_EQ(first_difference(download(H, want.size()), want), "");

  const int32_t bad[] = {1, -5, int32_t(kVocab)};
  dids.upload(bad, sizeof bad);
  ds4::cuda::embed(dids, 3, dtable, kVocab, kEmbd, kHc, H, error);
  EXPECT_THROW(ds4::cuda::check_embed_error(error), std::out_of_range);
  EXPECT_NO_THROW(ds4::cuda::check_embed_error(error)) << "the check clears the word";
  const auto got = download(H, size_t(3 * kHc * kEmbd));
  EXPECT_EQ(first_difference(std::vector<float>(got.begin() + kHc * kEmbd, got.end()),
                             std::vector<float>(size_t(2 * kHc * kEmbd), 0.0f)),
            "")
      << "the bad ids' rows are zeroed";
}

TEST(HcGpu, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer b(4096), small(4);
  EXPECT_THROW(ds4::cuda::hc_pre(b, b, b, b, 1, 17, 8, 20, 1e-6f, b, b), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::hc_pre(b, small, b, b, 1, 4, 8, 20, 1e-6f, b, b), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::hc_post(b, b, b, 1, 4, 8, b), std::invalid_argument);  // out_H is H
  EXPECT_THROW(ds4::cuda::hc_head_collapse(b, b, b, b, 1, 0, 8, 1e-6f, b), std::invalid_argument);
  EXPECT_THROW(ds4::cuda::embed(b, 2, small, 1, 8, 4, b, b), std::invalid_argument);
}

}  // namespace
