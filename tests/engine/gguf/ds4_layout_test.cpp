// The DS4 catalogue against the real ds4-tiny file (it must match exactly), and the checker's
// message for each kind of violation, on deliberately broken copies of that file.
#include "engine/gguf/ds4_layout.hpp"

#include <gtest/gtest.h>

#include "tests/engine/gguf/gguf_variants.hpp"
#include "tests/engine/gguf/test_paths.hpp"

namespace ds4::gguf {
namespace {

using test::TensorEdit;
using test::Variant;

const GgufFile& tiny() {
  static GgufFile f = GgufFile::open(test::ds4_tiny_model());
  return f;
}

std::vector<std::string> issues_of(const Variant& v) {
  std::vector<std::byte> img = test::make_variant(tiny(), v).write_to_memory();
  GgufFile f = GgufFile::from_memory(img, "variant.gguf");
  return check_ds4_layout(f);
}

::testing::AssertionResult has_issue(const std::vector<std::string>& issues, const std::string& text) {
  for (const auto& i : issues)
    if (i.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "no issue contains \"" << text << "\"; issues:";
  for (const auto& i : issues) r << "\n  " << i;
  return r;
}

TEST(Ds4Layout, DimsFromDs4TinyMetadata) {
  Ds4Dims d = Ds4Dims::from_metadata(tiny());
  EXPECT_EQ(d.n_layer, 6u);
  EXPECT_EQ(d.n_embd, 256u);
  EXPECT_EQ(d.n_vocab, 1024u);
  EXPECT_EQ(d.n_head, 4u);
  EXPECT_EQ(d.head_dim, 512u);
  EXPECT_EQ(d.out_groups, 2u);
  EXPECT_EQ(d.n_expert, 16u);
  EXPECT_EQ(d.n_expert_used, 6u);
  EXPECT_EQ(d.n_hash_layer, 3u);
  EXPECT_EQ(d.hc_mix(), 24u);
  EXPECT_EQ(d.compress_ratios, (std::vector<uint32_t>{0, 0, 4, 128, 4, 128}));
}

TEST(Ds4Layout, CatalogueIsExactlyTheDs4TinyTensorTable) {
  const std::vector<TensorRule> rules = ds4_tensor_catalogue(Ds4Dims::from_metadata(tiny()));
  ASSERT_EQ(rules.size(), tiny().tensors().size());
  for (size_t i = 0; i < rules.size(); ++i) {
    const TensorInfo& t = tiny().tensors()[i];
    EXPECT_EQ(rules[i].name, t.name) << i;  // same order as GGML wrote them
    EXPECT_EQ(rules[i].dims, t.dims) << t.name;
    EXPECT_EQ(rules[i].allowed.front(), t.type) << t.name << ": first allowed type is the q2 recipe";
    EXPECT_EQ(family_of(t.name), rules[i].family) << t.name;
  }
  EXPECT_TRUE(check_ds4_layout(tiny()).empty());
}

TEST(Ds4Layout, FamiliesByName) {
  EXPECT_EQ(family_of("blk.42.ffn_up_exps.weight"), Family::RoutedExperts);
  EXPECT_EQ(family_of("blk.0.ffn_down_shexp.weight"), Family::SharedExpert);
  EXPECT_EQ(family_of("blk.3.attn_kv_a_norm.weight"), Family::Norms);
  EXPECT_EQ(family_of("blk.3.indexer_compressor_norm.weight"), Family::Norms);
  EXPECT_EQ(family_of("blk.2.indexer.attn_q_b.weight"), Family::CompressorIndexer);
  EXPECT_EQ(family_of("blk.2.attn_compressor_ape.weight"), Family::CompressorIndexer);
  EXPECT_EQ(family_of("blk.1.exp_probs_b.bias"), Family::Router);
  EXPECT_EQ(family_of("blk.1.ffn_gate_tid2eid.weight"), Family::Router);
  EXPECT_EQ(family_of("output_hc_fn.weight"), Family::HyperConnection);
  EXPECT_EQ(family_of("output.weight"), Family::OutputHead);
  EXPECT_EQ(family_of("token_embd.weight"), Family::Embedding);
  EXPECT_EQ(family_of("blk.x.attn_norm.weight"), std::nullopt);
  EXPECT_EQ(family_of("rope_freqs"), std::nullopt);
}

TEST(Ds4Layout, DecodeBytesPerToken) {
  const Ds4Dims d = Ds4Dims::from_metadata(tiny());
  const auto rules = ds4_tensor_catalogue(d);
  auto rule = [&](const std::string& n) {
    return *std::find_if(rules.begin(), rules.end(), [&](auto& r) { return r.name == n; });
  };
  EXPECT_EQ(decode_bytes_per_token(rule("blk.0.ffn_gate_exps.weight"), 16 * 1000, d), 6u * 1000);
  EXPECT_EQ(decode_bytes_per_token(rule("token_embd.weight"), 524288, d), 512u);
  EXPECT_EQ(decode_bytes_per_token(rule("blk.0.ffn_gate_tid2eid.weight"), 6 * 4 * 1024, d), 24u);
  EXPECT_EQ(decode_bytes_per_token(rule("output.weight"), 278528, d), 278528u);
}

TEST(Ds4Layout, MissingTensor) {
  Variant v;
  v.tensor = [](const TensorInfo& t) { return test::drop_named(t, "blk.3.attn_kv.weight"); };
  EXPECT_TRUE(has_issue(issues_of(v), "missing tensor 'blk.3.attn_kv.weight' (attention)"));
  // exp_probs_b.bias is optional.
  Variant opt;
  opt.tensor = [](const TensorInfo& t) { return test::drop_named(t, "blk.4.exp_probs_b.bias"); };
  EXPECT_TRUE(issues_of(opt).empty());
}

TEST(Ds4Layout, WrongType) {
  Variant v;
  v.tensor = [](const TensorInfo& t) -> std::optional<TensorEdit> {
    if (t.name == "blk.1.attn_q_a.weight") return TensorEdit{.type = quant::Type::F16};
    return std::nullopt;
  };
  EXPECT_TRUE(has_issue(issues_of(v), "tensor 'blk.1.attn_q_a.weight' has type f16, the engine accepts q8_0"));
}

TEST(Ds4Layout, GateAndUpExpertTypesMustMatch) {
  Variant v;
  v.tensor = [](const TensorInfo& t) -> std::optional<TensorEdit> {
    if (t.name == "blk.5.ffn_up_exps.weight") return TensorEdit{.type = quant::Type::Q2_K};
    return std::nullopt;
  };
  auto issues = issues_of(v);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_TRUE(has_issue(issues, "tensor 'blk.5.ffn_up_exps.weight' has type q2_K but the gate experts are iq2_xxs"));
}

TEST(Ds4Layout, ExpertCountFromTheThirdDimension) {
  Variant v;
  v.tensor = [](const TensorInfo& t) -> std::optional<TensorEdit> {
    if (t.name == "blk.2.ffn_down_exps.weight") return TensorEdit{.dims = std::vector<uint64_t>{256, 256, 8}};
    return std::nullopt;
  };
  EXPECT_TRUE(has_issue(issues_of(v),
                        "tensor 'blk.2.ffn_down_exps.weight' has shape [256, 256, 8], metadata implies "
                        "[256, 256, 16]: holds 8 experts, deepseek4.expert_count is 16"));
}

TEST(Ds4Layout, ShapeInconsistentWithMetadata) {
  Variant v;  // metadata says 8 heads: q_b, sinks and output_a no longer match the file
  v.set_keys.emplace_back("deepseek4.attention.head_count", uint32_t{8});
  auto issues = issues_of(v);
  EXPECT_TRUE(has_issue(issues, "tensor 'blk.0.attn_q_b.weight' has shape [128, 2048], metadata implies [128, 4096]"));
  EXPECT_TRUE(has_issue(issues, "tensor 'blk.0.attn_sinks.weight' has shape [4], metadata implies [8]"));
}

TEST(Ds4Layout, ExpertUsedCountShapesTid2eid) {
  Variant v;
  v.set_keys.emplace_back("deepseek4.expert_used_count", uint32_t{4});
  EXPECT_TRUE(has_issue(issues_of(v),
                        "tensor 'blk.0.ffn_gate_tid2eid.weight' has shape [6, 1024], metadata implies "
                        "[4, 1024]"));
}

TEST(Ds4Layout, UnexpectedTensors) {
  Variant v;
  v.extra_tensors = {"rope_freqs.weight", "blk.3.ffn_gate_tid2eid.weight"};
  auto issues = issues_of(v);
  EXPECT_TRUE(has_issue(issues, "unexpected tensor 'rope_freqs.weight' (not a DS4 tensor name)"));
  EXPECT_TRUE(has_issue(issues, "unexpected tensor 'blk.3.ffn_gate_tid2eid.weight' (a DS4 tensor name, but not one"));
}

TEST(Ds4Layout, MissingLayerIsReportedTensorByTensor) {
  Variant v;
  v.tensor = [](const TensorInfo& t) -> std::optional<TensorEdit> {
    if (t.name.rfind("blk.4.", 0) == 0) return TensorEdit{.drop = true};
    return std::nullopt;
  };
  auto issues = issues_of(v);
  EXPECT_EQ(issues.size(), 33u);  // every required blk.4 tensor (ratio-4 layer, exp_probs_b optional)
  EXPECT_TRUE(has_issue(issues, "missing tensor 'blk.4.attn_norm.weight' (norms)"));
}

TEST(Ds4Layout, MetadataProblems) {
  Variant missing;
  missing.drop_keys = {"deepseek4.expert_count"};
  EXPECT_TRUE(has_issue(issues_of(missing), "missing metadata key 'deepseek4.expert_count'"));
  Variant arch;
  arch.set_keys.emplace_back("general.architecture", "llama");
  EXPECT_TRUE(has_issue(issues_of(arch), "metadata key 'general.architecture': is 'llama', expected 'deepseek4'"));
  Variant ratio;
  ratio.set_keys.emplace_back("deepseek4.attention.compress_ratios", make_array<uint32_t>({0, 0, 4, 128, 4, 64}));
  EXPECT_TRUE(has_issue(issues_of(ratio), "layer 5 has ratio 64 (allowed: 0, 4, 128)"));
  Variant huge;
  huge.set_keys.emplace_back("deepseek4.block_count", uint32_t{4000000000u});
  EXPECT_TRUE(has_issue(issues_of(huge),
                        "metadata key 'deepseek4.block_count': value 4000000000 is outside the plausible range"));
  Variant type;
  type.set_keys.emplace_back("deepseek4.expert_weights_norm", uint32_t{1});
  EXPECT_TRUE(has_issue(issues_of(type), "metadata key 'deepseek4.expert_weights_norm': expected bool, found u32"));
}

}  // namespace
}  // namespace ds4::gguf
