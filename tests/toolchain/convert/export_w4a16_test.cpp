// W4A16 export: INT4 group-32 experts with the scale grid search, FP8 attention kept with F32
// block scales, BF16 for shared expert/compressor/indexer, quantization_config, shard limit,
// SNR in the audit.
#include "toolchain/convert/export_w4a16.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/quant/quant.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/official_formats.hpp"

namespace ds4::convert::test {
namespace {

TEST(ExportW4a16, GridSearchNeverLosesToThePlainScale) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    float x[32];
    for (float& v : x) v = nd(rng);
    int8_t q[32];
    const float s = int4_group_quantize(x, 32, q);
    float amax = 0, e_best = 0, e_plain = 0;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    float s1 = amax / 7;  // r = 1, rounded to BF16 as the stored scale is
    uint16_t b;
    quant::traits(quant::Type::BF16).quantize(&s1, &b, 1);
    quant::traits(quant::Type::BF16).dequantize(&b, &s1, 1);
    for (int i = 0; i < 32; ++i) {
      ASSERT_GE(q[i], -8);
      ASSERT_LE(q[i], 7);
      e_best += (q[i] * s - x[i]) * (q[i] * s - x[i]);
      const float c = std::clamp(std::nearbyint(x[i] / s1), -8.0f, 7.0f);
      e_plain += (c * s1 - x[i]) * (c * s1 - x[i]);
    }
    EXPECT_LE(e_best, e_plain);  // r = 1 is in the grid
  }
}

TEST(ExportW4a16, WritesCompressedTensorsShardsWithSnr) {
  const fs::path out = scratch_dir("w4a16") / "w4a16";
  const W4a16Result r = export_w4a16(official_tiny().string(), out.string(), {.max_shard_bytes = 4u << 20});
  EXPECT_GT(r.shards, 2u);
  const Checkpoint ck = Checkpoint::open(out.string());  // headers, index and sizes all valid
  for (const auto& s : ck.shards()) EXPECT_LE(s->size() - 8 - s->header_json().size(), 4u << 20);
  const Checkpoint src = Checkpoint::open(official_tiny().string());

  // An expert: unpack, rescale and compare with the FP4 source.
  const SourceTensor* packed = ck.find("layers.3.ffn.experts.7.w2.weight_packed");
  const SourceTensor* scale = ck.find("layers.3.ffn.experts.7.w2.weight_scale");
  ASSERT_TRUE(packed && scale && ck.find("layers.3.ffn.experts.7.w2.weight_shape"));
  EXPECT_EQ(packed->dtype, Dtype::I32);
  EXPECT_EQ(scale->dtype, Dtype::BF16);
  const SourceTensor* w = src.find("layers.3.ffn.experts.7.w2.weight");
  const SourceTensor* ws = src.find("layers.3.ffn.experts.7.w2.scale");
  const uint64_t rows = w->shape[0], in = w->shape[1] * 2;
  ASSERT_EQ(packed->shape, (std::vector<uint64_t>{rows, in / 8}));
  std::vector<float> ref(rows * in), sc(rows * in / 32);
  decode_fp4_rows(reinterpret_cast<const uint8_t*>(w->data), reinterpret_cast<const uint8_t*>(ws->data), in, 0, rows,
                  ref.data());
  quant::traits(quant::Type::BF16).dequantize(scale->data, sc.data(), int64_t(sc.size()));
  const auto* words = reinterpret_cast<const uint32_t*>(packed->data);
  double sig = 0, noise = 0;
  for (uint64_t i = 0; i < rows * in; ++i) {
    const int q = int((words[i / 8] >> (4 * (i % 8))) & 15) - 8;
    const double e = q * double(sc[i / 32]) - ref[i];
    sig += double(ref[i]) * ref[i], noise += e * e;
  }
  const double snr = 10 * std::log10(sig / noise);
  EXPECT_GT(snr, 15.0);
  std::printf("[ w4a16    ] expert SNR %.2f dB (this tensor), %.2f dB (all experts)\n", snr, r.expert_snr_db);
  EXPECT_GT(r.expert_snr_db, 15.0);
  EXPECT_TRUE(std::isfinite(r.expert_snr_db));

  // FP8 attention kept; its E8M0 scales as F32 weight_scale.
  const SourceTensor* q8 = ck.find("layers.2.attn.wq_b.weight");
  ASSERT_TRUE(q8 && q8->dtype == Dtype::F8_E4M3);
  EXPECT_EQ(0, std::memcmp(q8->data, src.find("layers.2.attn.wq_b.weight")->data, q8->n_bytes));
  const SourceTensor* q8s = ck.find("layers.2.attn.wq_b.weight_scale");
  ASSERT_TRUE(q8s && q8s->dtype == Dtype::F32);
  EXPECT_EQ(reinterpret_cast<const float*>(q8s->data)[0],
            e8m0_value(uint8_t(src.find("layers.2.attn.wq_b.scale")->data[0])));
  EXPECT_EQ(ck.find("layers.2.attn.wq_b.scale"), nullptr);
  // Shared expert to BF16.
  EXPECT_EQ(ck.find("layers.2.ffn.shared_experts.w1.weight")->dtype, Dtype::BF16);

  std::ifstream cfg(out / "config.json");
  std::stringstream ss;
  ss << cfg.rdbuf();
  const auto qc = boost::json::parse(ss.str()).at("quantization_config");
  EXPECT_EQ(qc.at("quant_method").as_string(), "compressed-tensors");
  EXPECT_EQ(qc.at("config_groups").at("routed_experts").at("weights").at("group_size").as_int64(), 32);
  EXPECT_TRUE(fs::exists(out / "w4a16.audit.json"));
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
}

}  // namespace
}  // namespace ds4::convert::test
