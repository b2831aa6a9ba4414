// The device's sink attention (kernels/attention.cuh) against the CPU's attend_fast
// (engine/model/attention_fast.cpp), bit for bit, on a LayerState like the engine's: the raw
// ring and the compressed store uploaded as two buffers and the visible rows passed as addresses
// into them. Widths 512, 96 and 64, 1..3 heads, row counts that are not multiples of 8, more rows
// than one tile of pass 2, none at all. Skips with the reason where no GPU is usable.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/cuda/attention.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/model/attention.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"
#include "tests/engine/cuda/stage_cases.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::model::LayerState;

TEST(AttentionGpu, MatchesTheCpuFastOrderBitForBit) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(30);
  ds4::kernels::ThreadPool pool(2);
  const AttnShape shapes[] = {{512, 23, 17, 13, true},  {512, 5, 128, 0, false}, {96, 200, 128, 1000, false},
                              {64, 700, 600, 77, true}, {512, 0, 128, 0, false}, {96, 1, 128, 0, false}};
  for (const AttnShape& s : shapes)
    for (uint32_t H : {1u, 2u, 3u}) {
      const AttnCase c = make_attn_case(rng, s, H, pool);
      const LayerState& st = c.st;

      // The rows as the engine would hold them on the device: the ring and the store as they are.
      auto raw = upload(st.raw), comp = upload(st.comp.data);
      std::vector<uint64_t> addr;
      const auto at = [](const ds4::cuda::DeviceBuffer& b, const float* base, const float* row) {
        return b.ptr() + uint64_t(row - base) * sizeof(float);
      };
      for (uint32_t r = 0; r < st.n_visible_raw(); r++) addr.push_back(at(raw, st.raw.data(), st.visible_raw_row(r)));
      for (uint32_t r = 0; r < s.n_comp; r++)
        if (c.allowed[r]) addr.push_back(at(comp, st.comp.data.data(), st.comp.row(r)));
      const int32_t n = int32_t(addr.size());
      ds4::cuda::DeviceBuffer rows(addr.empty() ? 8 : addr.size() * 8);
      if (n) rows.upload(addr.data(), addr.size() * 8);
      auto dq = upload(c.q), dsinks = upload(c.sinks);
      ds4::cuda::DeviceBuffer scores(sizeof(float) * (size_t(n) * H + 1)), out(c.want.size() * sizeof(float));
      ds4::cuda::attention_fast(dq, rows, n, int32_t(H), int32_t(s.d), dsinks, scores, out);
      EXPECT_EQ(first_difference(download(out, c.want.size()), c.want), "")
          << "d " << s.d << ", " << n << " rows, " << H << " heads";
    }
}

TEST(AttentionGpu, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  ds4::cuda::DeviceBuffer q(2048 * 4), rows(8 * 4), sinks(8), scores(64), out(2048 * 4);
  EXPECT_THROW(ds4::cuda::attention_fast(q, rows, 4, 1, 2048, sinks, scores, out), std::invalid_argument);  // d > 1024
  EXPECT_THROW(ds4::cuda::attention_fast(q, rows, 5, 1, 64, sinks, scores, out), std::invalid_argument);    // 5 rows
}

}  // namespace
