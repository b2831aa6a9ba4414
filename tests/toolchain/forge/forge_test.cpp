// The forge: byte-identical output per seed, the full DS4 layout with the q2 recipe, the same
// metadata values and tensor table as the GGML-written ds4-tiny, the documented weight statistics,
// and a byte-level BPE vocabulary with the DS4 specials where the ds4-tiny model has them; the
// forged MTP drafter: the MTP catalogue with the q2 types, bound to its model, same seed same bytes.
#include "toolchain/forge/forge.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/gguf/test_paths.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/forge/forge_random.hpp"
#include "toolchain/forge/forge_vocab.hpp"

namespace ds4::gguf::forge {
namespace {

const std::vector<std::byte>& tiny_seed(uint64_t seed) {
  static std::map<uint64_t, std::vector<std::byte>> cache;
  auto it = cache.find(seed);
  if (it == cache.end()) it = cache.emplace(seed, forge_writer(forge_preset("tiny"), seed).write_to_memory()).first;
  return it->second;
}

std::vector<float> dequantized(const GgufFile& f, const std::string& name) {
  const TensorInfo& t = f.tensor(name);
  std::vector<float> out(t.n_elements);
  if (t.type == quant::Type::F32) std::memcpy(out.data(), f.data(t), t.n_bytes);
  else quant::traits(t.type).dequantize(f.data(t), out.data(), static_cast<int64_t>(t.n_elements));
  return out;
}

std::pair<double, double> mean_std(const std::vector<float>& x) {
  double s = 0, s2 = 0;
  for (float v : x) s += v, s2 += double(v) * v;
  const double m = s / x.size();
  return {m, std::sqrt(s2 / x.size() - m * m)};
}

TEST(ForgeRandom, StreamsAreDeterministicAndNormal) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next(), b.next());
  EXPECT_EQ(Rng(7).next(), 0x63cbe1e459320dd7ull);  // pins the generator: a change breaks every forged file
  Rng r(1);
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = r.normal(2.0, 3.0);
    s += x, s2 += x * x;
  }
  EXPECT_NEAR(s / n, 2.0, 0.03);
  EXPECT_NEAR(std::sqrt(s2 / n - (s / n) * (s / n)), 3.0, 0.03);
  EXPECT_NE(stream_seed(1, "a"), stream_seed(1, "b"));
  EXPECT_NE(stream_seed(1, "a"), stream_seed(2, "a"));
}

TEST(Forge, SameSeedSameBytesOtherSeedOtherWeights) {
  const std::vector<std::byte> again = forge_writer(forge_preset("tiny"), 1).write_to_memory();
  EXPECT_TRUE(tiny_seed(1) == again);
  const std::vector<std::byte>& other = tiny_seed(2);
  ASSERT_EQ(other.size(), again.size());  // only general.name differs in the header, same length
  EXPECT_FALSE(other == again);
  // The file written to disk is the in-memory image.
  const std::string path = (std::filesystem::temp_directory_path() / "forge-test-seed1.gguf").string();
  ForgeSummary s = forge_model(forge_preset("tiny"), 1, path);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> disk((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s.file_bytes, disk.size());
  ASSERT_EQ(disk.size(), again.size());
  EXPECT_EQ(std::memcmp(disk.data(), again.data(), disk.size()), 0);
  std::filesystem::remove(path);
}

TEST(Forge, TinyHasTheDs4TinyLayoutAndMetadata) {
  GgufFile forged = GgufFile::from_memory(tiny_seed(1), "forged");
  GgufFile ref = GgufFile::open(test::ds4_tiny_model());
  EXPECT_TRUE(check_ds4_layout(forged).empty());
  // Same tensor table as the GGML-written reference (names, order, types, shapes, offsets).
  ASSERT_EQ(forged.tensors().size(), ref.tensors().size());
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    const TensorInfo &a = forged.tensors()[i], &b = ref.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << a.name;
    EXPECT_EQ(a.dims, b.dims) << a.name;
    EXPECT_EQ(a.offset, b.offset) << a.name;
  }
  // Same keys in the same order with the same types; same values for every model key.
  ASSERT_EQ(forged.metadata().size(), ref.metadata().size());
  for (size_t i = 0; i < ref.metadata().size(); ++i) {
    const KeyValue &a = forged.metadata()[i], &b = ref.metadata()[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.value.type_description(), b.value.type_description()) << a.key;
    if (a.key.rfind("deepseek4.", 0) == 0 || a.key == "general.alignment" ||
        a.key.find("_token") != std::string::npos || a.key == "tokenizer.ggml.model" || a.key == "tokenizer.ggml.pre" ||
        a.key == "tokenizer.ggml.token_type") {
      EXPECT_EQ(a.value, b.value) << a.key;
    }
  }
  EXPECT_EQ(forged.get<std::string>("general.name"), "ds4-forged-tiny-seed1");
}

TEST(Forge, WeightStatisticsFollowTheRecipe) {
  GgufFile f = GgufFile::from_memory(tiny_seed(1), "forged");
  auto [em, es] = mean_std(dequantized(f, "token_embd.weight"));
  EXPECT_NEAR(em, 0.0, 0.01);
  EXPECT_NEAR(es, 0.5, 0.01);
  auto [qm, qs] = mean_std(dequantized(f, "blk.0.attn_q_a.weight"));  // Q8_0, fan_in 256
  EXPECT_NEAR(qs, 1.0 / 16, 0.002);
  auto [om, os] = mean_std(dequantized(f, "output.weight"));  // gain 3
  EXPECT_NEAR(os, 3.0 / 16, 0.005);
  auto [rm, rs] = mean_std(dequantized(f, "blk.3.ffn_gate_inp.weight"));  // gain 2
  EXPECT_NEAR(rs, 2.0 / 16, 0.01);
  auto [nm, ns] = mean_std(dequantized(f, "blk.2.attn_kv_a_norm.weight"));
  EXPECT_NEAR(nm, 1.5, 0.03);
  EXPECT_NEAR(ns, 0.15, 0.03);
  auto [fm, fs] = mean_std(dequantized(f, "blk.1.ffn_norm.weight"));
  EXPECT_NEAR(fm, 1.0, 0.03);
  for (float s : dequantized(f, "blk.0.hc_attn_scale.weight")) {
    EXPECT_GE(s, 0.3f);
    EXPECT_LT(s, 1.0f);
  }
  auto [gm, gs] = mean_std(dequantized(f, "blk.0.ffn_gate_exps.weight"));  // IQ2_XXS, coarse
  EXPECT_NEAR(gs, 1.0 / 16, 0.02);
  // tid2eid: n_expert_used distinct experts in range, per token.
  const TensorInfo& t = f.tensor("blk.2.ffn_gate_tid2eid.weight");
  const auto* ids = reinterpret_cast<const int32_t*>(f.data(t));
  std::set<int32_t> seen_all;
  for (uint64_t tok = 0; tok < t.dims[1]; ++tok) {
    std::set<int32_t> row(ids + tok * 6, ids + tok * 6 + 6);
    ASSERT_EQ(row.size(), 6u) << "token " << tok;
    for (int32_t e : row) ASSERT_TRUE(e >= 0 && e < 16);
    seen_all.insert(row.begin(), row.end());
  }
  EXPECT_EQ(seen_all.size(), 16u);
}

TEST(Forge, RoutedExpertPoolTiling) {
  GgufFile f = GgufFile::from_memory(tiny_seed(1), "forged");
  const TensorInfo& t = f.tensor("blk.1.ffn_down_exps.weight");
  const uint64_t rb = t.row_bytes(), P = 32;
  for (uint64_t r : {32ull, 100ull, 4095ull}) {
    const uint64_t src = (r + 131 * (r / P)) % P;
    EXPECT_EQ(std::memcmp(f.data(t) + r * rb, f.data(t) + src * rb, rb), 0) << r;
  }
  EXPECT_NE(std::memcmp(f.data(t), f.data(t) + rb, rb), 0);  // pool rows differ
  // Without a pool every row is drawn: the tiling identity no longer holds.
  ForgePreset full = forge_preset("tiny");
  full.expert_pool_rows = 0;
  ForgePreset pooled = forge_preset("tiny");
  EXPECT_EQ(forge_writer(full, 1).file_size(), forge_writer(pooled, 1).file_size());
}

TEST(Forge, BenchPresetIsMemoryBound) {
  ForgeSummary s;
  GgufWriter w = forge_writer(forge_preset("bench"), 1, &s);  // nothing generated until write()
  EXPECT_GE(s.decode_bytes_per_token, 300ull << 20);
  EXPECT_GE(s.file_bytes, 1000ull << 20);
  EXPECT_LE(s.file_bytes, 2000ull << 20);
  EXPECT_EQ(s.file_bytes, w.file_size());
  EXPECT_THROW(forge_preset("huge"), std::invalid_argument);
}

TEST(ForgeDrafter, TinyDrafterFollowsTheMtpCatalogueAndBindsToItsModel) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("forge-drafter-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string main1 = (dir / "m1.gguf").string(), main2 = (dir / "m2.gguf").string();
  const std::string side = (dir / "m1.mtp.gguf").string();
  forge_model(forge_preset("tiny"), 1, main1);
  forge_model(forge_preset("tiny"), 2, main2);
  const ForgeSummary s = forge_drafter(forge_preset("tiny"), 1, main1, side);

  EXPECT_NO_THROW(check_sidecar_binding(main1, side));
  try {
    check_sidecar_binding(main2, side);
    ADD_FAILURE() << "a drafter bound to another model's weights passed";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find(kMtpBaseDigestKey), std::string::npos) << e.what();
  }
  const GgufFile f = GgufFile::open(side);
  EXPECT_TRUE(convert::check_mtp_layout(f).empty());
  const std::vector<TensorRule> cat = convert::mtp_catalogue(forge_preset("tiny").dims);
  ASSERT_EQ(f.tensors().size(), cat.size());
  EXPECT_EQ(s.n_tensors, cat.size());
  for (const TensorRule& r : cat) {
    const TensorInfo& t = f.tensor(r.name);
    EXPECT_EQ(t.type, r.allowed.front()) << r.name;  // the q2 recipe
    EXPECT_EQ(t.dims, r.dims) << r.name;
  }
  const auto [m, sd] = mean_std(dequantized(f, "mtp.0.enorm.weight"));
  EXPECT_NEAR(m, 1.0, 0.05);
  EXPECT_NEAR(sd, 0.1, 0.03);

  // Same seed and base, same bytes; another seed, other weights.
  const std::string digest = mtp_base_digest(GgufFile::open(main1));
  const std::vector<std::byte> again = forge_drafter_writer(forge_preset("tiny"), 1, digest).write_to_memory();
  std::ifstream in(side, std::ios::binary);
  std::vector<char> disk((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(disk.size(), again.size());
  EXPECT_EQ(std::memcmp(disk.data(), again.data(), disk.size()), 0);
  EXPECT_FALSE(forge_drafter_writer(forge_preset("tiny"), 2, digest).write_to_memory() == again);
  fs::remove_all(dir);
}

TEST(ForgeDrafter, BenchDrafterHasTheMtpCatalogue) {
  // Sizes only: the bench drafter's tensors are generated while writing, which this does not do.
  ForgeSummary s;
  const GgufWriter w = forge_drafter_writer(forge_preset("bench"), 1, "0123456789abcdef", &s);
  EXPECT_EQ(s.n_tensors, convert::mtp_catalogue(forge_preset("bench").dims).size());
  EXPECT_EQ(s.file_bytes, w.file_size());
  EXPECT_GT(s.weight_bytes, 0u);
}

TEST(ForgeVocab, Ds4TinyLayout) {
  const ForgeVocab v = build_forge_vocab(1024);
  ASSERT_EQ(v.tokens.size(), 1024u);
  ASSERT_EQ(v.merges.size(), 761u);
  EXPECT_EQ(v.tokens[0], "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(v.tokens[1], "<｜end▁of▁sentence｜>");
  EXPECT_EQ(v.tokens[2], "Ā");         // byte 0
  EXPECT_EQ(v.tokens[2 + ' '], "Ġ");   // space
  EXPECT_EQ(v.tokens[2 + '\n'], "Ċ");  // newline
  EXPECT_EQ(v.tokens[2 + 'A'], "A");
  EXPECT_EQ(v.tokens[2 + 0xff], "ÿ");
  EXPECT_EQ(v.tokens[1019], "<｜User｜>");
  EXPECT_EQ(v.tokens[1020], "<｜Assistant｜>");
  EXPECT_EQ(v.tokens[1021], "<think>");
  EXPECT_EQ(v.tokens[1022], "</think>");
  EXPECT_EQ(v.tokens[1023], "｜DSML｜");
  std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(unique.size(), v.tokens.size());
  std::set<std::string> known(v.tokens.begin(), v.tokens.begin() + 258);
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    const size_t sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos);
    const std::string l = m.substr(0, sp), r = m.substr(sp + 1);
    // Both halves exist before the merge that uses them, and the merge makes token 258 + i.
    EXPECT_TRUE(known.count(l) && known.count(r)) << m;
    EXPECT_EQ(v.tokens[258 + i], l + r);
    known.insert(l + r);
  }
  EXPECT_EQ(v.merges[0], "Ġ t");
  for (size_t i = 0; i < v.token_types.size(); ++i) EXPECT_EQ(v.token_types[i], (i < 2 || i >= 1019) ? 3 : 1) << i;
  EXPECT_EQ(build_forge_vocab(2048).merges.size(), 2048u - 263);
  EXPECT_THROW(build_forge_vocab(100), std::invalid_argument);
  EXPECT_THROW(build_forge_vocab(1u << 20), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::gguf::forge
