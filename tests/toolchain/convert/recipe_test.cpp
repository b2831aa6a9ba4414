// Recipes: built-ins, TOML, and the engine's type constraints checked before any byte is
// written (the field's "token_embd.weight has type q8_0, expected f16" after 80 GiB).
#include "toolchain/convert/recipe.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/quant/quant.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/forge/forge.hpp"

namespace ds4::convert::test {
namespace {

using quant::Type;

std::vector<gguf::TensorRule> tiny_catalogue() {
  return gguf::ds4_tensor_catalogue(gguf::forge::forge_preset("tiny").dims);
}

const gguf::TensorRule& rule(const std::vector<gguf::TensorRule>& c, const std::string& name) {
  for (const auto& r : c)
    if (r.name == name) return r;
  throw std::runtime_error(name);
}

TEST(Recipe, BuiltinsAreLoadableAndPickTheShippingTypes) {
  const auto cat = tiny_catalogue();
  for (const std::string& n : builtin_recipe_names()) EXPECT_TRUE(check_recipe(load_recipe(n), cat).empty()) << n;
  const Recipe q2 = load_recipe("q2");
  EXPECT_EQ(q2.type_for(rule(cat, "blk.4.ffn_up_exps.weight")), Type::IQ2_XXS);
  EXPECT_EQ(q2.type_for(rule(cat, "blk.4.ffn_down_exps.weight")), Type::Q2_K);
  EXPECT_EQ(q2.type_for(rule(cat, "blk.4.attn_q_b.weight")), Type::Q8_0);
  EXPECT_EQ(q2.type_for(rule(cat, "token_embd.weight")), Type::F16);
  EXPECT_EQ(q2.type_for(rule(cat, "blk.4.attn_norm.weight")), Type::F32);
  EXPECT_EQ(q2.type_for(rule(cat, "blk.0.ffn_gate_tid2eid.weight")), Type::I32);
  EXPECT_EQ(load_recipe("q4").type_for(rule(cat, "blk.1.ffn_gate_exps.weight")), Type::Q4_K);
  EXPECT_EQ(load_recipe("mxfp4").type_for(rule(cat, "blk.1.ffn_down_exps.weight")), Type::MXFP4);
  EXPECT_THROW(load_recipe("q3"), ConvertError);
}

TEST(Recipe, TomlOverridesSlotsAndTensors) {
  const fs::path d = scratch_dir("toml");
  std::ofstream(d / "r.toml")
      << "base = \"q4\"\n[slots]\nrouted_down = \"q2_K\"\n[tensors]\n\"blk.2.ffn_up_exps.weight\" = \"q2_K\"\n"
         "\"blk.2.ffn_gate_exps.weight\" = \"q2_K\"\n";
  const Recipe r = load_recipe((d / "r.toml").string());
  const auto cat = tiny_catalogue();
  EXPECT_EQ(r.type_for(rule(cat, "blk.1.ffn_gate_exps.weight")), Type::Q4_K);
  EXPECT_EQ(r.type_for(rule(cat, "blk.1.ffn_down_exps.weight")), Type::Q2_K);
  EXPECT_EQ(r.type_for(rule(cat, "blk.2.ffn_up_exps.weight")), Type::Q2_K);
  EXPECT_TRUE(check_recipe(r, cat).empty());
  std::ofstream(d / "bad.toml") << "[slots]\nrouted_middle = \"q2_K\"\n";
  EXPECT_THROW(load_recipe((d / "bad.toml").string()), ConvertError);
  std::ofstream(d / "bad2.toml") << "[slots]\nembedding = \"q5_k\"\n";
  EXPECT_THROW(load_recipe((d / "bad2.toml").string()), ConvertError);
}

TEST(Recipe, GateAndUpMustMatch) {
  const fs::path d = scratch_dir("gate_up");
  std::ofstream(d / "r.toml") << "[tensors]\n\"blk.3.ffn_up_exps.weight\" = \"q4_K\"\n";
  const auto bad = check_recipe(load_recipe((d / "r.toml").string()), tiny_catalogue());
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("blk.3.ffn_up_exps.weight"), std::string::npos) << bad[0];
}

TEST(Recipe, UnloadableRecipeIsRejectedBeforeTheFirstByte) {
  const fs::path d = scratch_dir("unloadable");
  std::ofstream(d / "r.toml") << "base = \"q2\"\n[slots]\nembedding = \"q8_0\"\n";
  ConvertOptions o;
  o.source_dir = official_tiny().string();
  o.output = (d / "out.gguf").string();
  o.recipe = (d / "r.toml").string();
  try {
    convert_checkpoint(o);
    FAIL() << "an unloadable recipe was accepted";
  } catch (const ConvertError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("token_embd.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("q8_0"), std::string::npos) << m;
    EXPECT_NE(m.find("f16"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(d / "out.gguf"));
  EXPECT_FALSE(fs::exists(d / "out.gguf.partial"));
}

TEST(Recipe, QuantizeRowsIsTheConvertersQuantizer) {
  std::vector<float> x(2 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * float(i));
  const auto b = quantize_rows(Type::Q8_0, x.data(), 2, 256);
  ASSERT_EQ(b.size(), 2 * quant::row_bytes(Type::Q8_0, 256));
  std::vector<float> back(x.size());
  quant::traits(Type::Q8_0).dequantize(b.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], 0.01f);
  EXPECT_THROW(quantize_rows(Type::Q2_K, x.data(), 1, 100), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::convert::test
