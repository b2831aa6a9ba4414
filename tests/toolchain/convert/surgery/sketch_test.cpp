// Expert similarity by random-coordinate sketching on a synthetic official-format layer whose
// experts have known pairwise angles (each a mix of two random directions plus a little noise):
// sketched cosines rank the experts like exact ones, under a memory cap smaller than one expert
// in fp32; and the hash-layer report (loads, reassignment shares, T1/T2 plans) on ds4-tiny,
// whose T1 and T2 plans the surgery carries out.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/official_formats.hpp"
#include "toolchain/convert/surgery/expert_sketch.hpp"
#include "toolchain/convert/surgery/hash_route.hpp"
#include "toolchain/convert/surgery/surgery.hpp"

namespace ds4::convert::test {
namespace {

using namespace ds4::convert::surgery;

constexpr uint32_t kExperts = 8;
constexpr uint64_t kRows = 64, kCols = 128;

fs::path synthetic_layer() {
  static const fs::path dir = [] {
    const fs::path d = scratch_dir("sketch_layer");
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<ShardEntry> es;
    for (const char* part : {".w1", ".w2", ".w3"}) {
      std::vector<float> b1(kRows * kCols), b2(kRows * kCols);
      for (float& x : b1) x = nd(rng);
      for (float& x : b2) x = nd(rng);
      for (uint32_t e = 0; e < kExperts; ++e) {
        const float th = 0.35f * float(e * e) / 7.0f;  // distinct, unevenly spaced angles
        std::vector<float> w(kRows * kCols);
        for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(th) * b1[i] + std::sin(th) * b2[i] + 0.05f * nd(rng);
        std::vector<std::byte> q(kRows * kCols / 2), s(kRows * kCols / 32);
        encode_fp4(w.data(), kRows, kCols, reinterpret_cast<uint8_t*>(q.data()), reinterpret_cast<uint8_t*>(s.data()));
        const std::string b = "layers.0.ffn.experts." + std::to_string(e) + part;
        es.push_back({b + ".weight", Dtype::I8, {kRows, kCols / 2}, q});
        es.push_back({b + ".scale", Dtype::F8_E8M0, {kRows, kCols / 32}, s});
      }
    }
    write_shard((d / "model.safetensors").string(), es);
    return d;
  }();
  return dir;
}

TEST(ExpertSketch, RanksLikeExactUnderMemoryCap) {
  const Checkpoint ck = Checkpoint::open(synthetic_layer().string());
  const Similarity exact = exact_similarity(ck, 0, kExperts);
  const uint64_t expert_fp32 = 3 * kRows * kCols * 4;
  SketchOptions o;
  o.max_memory = expert_fp32 / 4;  // a quarter of one expert in fp32
  const Similarity sk = sketch_similarity(ck, 0, kExperts, o);
  EXPECT_LE(sk.memory_bytes, o.max_memory);
  EXPECT_LT(sk.coordinates, sk.expert_elements);
  EXPECT_GT(sk.coordinates, 500u);
  // Every expert's nearest other expert, and the full order of its similarities, agree.
  for (uint32_t a = 0; a < kExperts; ++a) {
    std::vector<uint32_t> by_exact, by_sketch;
    for (uint32_t b = 0; b < kExperts; ++b)
      if (b != a) by_exact.push_back(b), by_sketch.push_back(b);
    std::sort(by_exact.begin(), by_exact.end(), [&](auto x, auto y) { return exact.at(a, x) > exact.at(a, y); });
    std::sort(by_sketch.begin(), by_sketch.end(), [&](auto x, auto y) { return sk.at(a, x) > sk.at(a, y); });
    EXPECT_EQ(by_exact[0], by_sketch[0]) << "expert " << a;
    for (uint32_t b = 0; b < kExperts; ++b) EXPECT_NEAR(sk.at(a, b), exact.at(a, b), 0.1) << a << "," << b;
  }
  // Fixed seed: the same sketch again; the exact path at full size equals the exact reference.
  EXPECT_EQ(sketch_similarity(ck, 0, kExperts, o).cosine, sk.cosine);
  o.max_memory = uint64_t(1) << 30;
  const Similarity full = sketch_similarity(ck, 0, kExperts, o);
  EXPECT_EQ(full.coordinates, full.expert_elements);
  for (size_t i = 0; i < full.cosine.size(); ++i) EXPECT_NEAR(full.cosine[i], exact.cosine[i], 2e-3);
  o.max_memory = kExperts * kExperts * 4;  // not even the Gram matrix and one coordinate
  EXPECT_THROW(sketch_similarity(ck, 0, kExperts, o), ConvertError);
}

TEST(HashRoute, ReportAndRepairPlans) {
  const Checkpoint ck = Checkpoint::open(official_tiny().string());
  std::vector<int32_t> tokens;
  std::mt19937 rng(5);
  for (int i = 0; i < 600; ++i) tokens.push_back(int32_t(rng() % 300));  // a skewed slice of the vocabulary
  const auto rs = hash_route_report(ck, tokens, 8, {.max_memory = 1 << 20});
  ASSERT_EQ(rs.size(), 3u);
  for (const HashLayerReport& r : rs) {
    uint64_t sum = 0;
    for (uint64_t l : r.load) sum += l;
    EXPECT_EQ(sum, r.assignments);
    EXPECT_EQ(r.assignments, 600u * 6);
    EXPECT_GT(r.naive_reassigned, 0.0);
    EXPECT_LE(r.by_load_reassigned, r.naive_reassigned);
    EXPECT_EQ(r.keep_by_load.size(), 8u);
    for (uint32_t e = 0; e < 16; ++e)
      EXPECT_TRUE(std::binary_search(r.keep_by_load.begin(), r.keep_by_load.end(), r.t1_target[e]));
  }
  for (const char* repair : {"naive", "t1", "t2"}) {
    const fs::path d = scratch_dir(std::string("hash_plan_") + repair);
    std::ofstream(d / "plan.toml") << repair_plan(rs, 6, 8, repair, std::string("ds4-tiny-") + repair);
    const SurgeryResult s =
        run_surgery({official_tiny().string(), (d / "out").string(), (d / "plan.toml").string(), {}});
    EXPECT_EQ(*s.plan.n_expert, 8u);
    EXPECT_EQ(s.merges.empty(), std::string(repair) != "t2") << repair;
  }
}

}  // namespace
}  // namespace ds4::convert::test
