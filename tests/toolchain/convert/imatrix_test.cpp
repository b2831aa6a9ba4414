// Importance matrix: the engine hook changes no logits, the collector counts every routed and
// dense input row, the GGML file round-trips, convert binds the imatrix hash into the artifact
// id and rejects an imatrix that does not fit the model, the imatrix steers exactly the
// weighted quantizers (each expert by its own slice) into a model the engine runs, and the
// bootstrap script runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <span>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/imatrix_file.hpp"
#include "toolchain/imatrix/imatrix_collector.hpp"

namespace ds4::convert::test {
namespace {

std::vector<int32_t> prompt() {
  const auto tc = ds4::test::load_tiny_cases(fs::path(ds4_tiny_dir()) / "cases.bin");
  for (const auto& k : tc.cases)
    if (k.name == "rand300") return k.prompt;
  throw std::runtime_error("no rand300");
}

TEST(Imatrix, ObserverChangesNoLogitsAndSeesEveryRow) {
  const auto p = prompt();
  auto plain = Model::load(ds4_tiny_model(), {.threads = 2});
  imatrix::Collector col;
  auto watched = Model::load(ds4_tiny_model(), {.threads = 2, .activation_observer = &col});
  Context a(plain), b(watched);
  const auto la = a.prefill(p);
  const std::vector<float> va(la.begin(), la.end());
  const auto lb = b.prefill(p);
  ASSERT_EQ(0, std::memcmp(va.data(), lb.data(), va.size() * 4));  // max |d logit| = 0
  const auto da = a.decode(7);
  const std::vector<float> vda(da.begin(), da.end());
  ASSERT_EQ(0, std::memcmp(vda.data(), b.decode(7).data(), vda.size() * 4));

  const uint64_t tokens = p.size() + 1;
  const auto& acc = col.accums();
  for (int l = 0; l < 6; ++l) {
    for (const char* t : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      const auto& e = acc.at("blk." + std::to_string(l) + "." + t + ".weight");
      uint64_t rows = 0;
      for (uint64_t r : e.rows) rows += r;
      EXPECT_EQ(rows, tokens * 6) << l << t;  // top-6: six expert rows per token
    }
    EXPECT_EQ(acc.at("blk." + std::to_string(l) + ".attn_q_a.weight").rows.at(0), tokens);
    EXPECT_EQ(acc.at("blk." + std::to_string(l) + ".ffn_gate_shexp.weight").rows.at(0), tokens);
  }
  // The head runs only where logits are produced (the last token of each prefill chunk, each
  // decode): its two projections see the same rows.
  EXPECT_EQ(acc.at("output.weight").rows.at(0), acc.at("output_hc_fn.weight").rows.at(0));
  EXPECT_GE(acc.at("output.weight").rows.at(0), 2u);
  EXPECT_LT(acc.at("output.weight").rows.at(0), tokens);
}

TEST(Imatrix, CollectWritesAGgmlFileWithCoverage) {
  const fs::path d = scratch_dir("imatrix_collect");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Explain how the compressed attention rows are pooled over windows of tokens. ";
  const auto r = imatrix::collect(ds4_tiny_model(), text,
                                  {.chunk_tokens = 64, .max_chunks = 3, .threads = 2, .dataset = "calib.txt"});
  EXPECT_EQ(r.chunks, 3u);
  EXPECT_EQ(r.expert_entries, 18u);  // 6 layers x gate/up/down
  ASSERT_EQ(r.coverage.size(), 6u);
  for (const auto& c : r.coverage) {
    EXPECT_EQ(c.experts, 16u);
    EXPECT_GE(c.experts_hit, 6u);
  }
  write_imatrix((d / "m.dat").string(), r.imatrix);
  const Imatrix back = read_imatrix((d / "m.dat").string());
  ASSERT_EQ(back.entries.size(), r.imatrix.entries.size());
  EXPECT_EQ(back.chunks, 3);
  EXPECT_EQ(back.dataset, "calib.txt");
  for (size_t i = 0; i < back.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].name, r.imatrix.entries[i].name);
    EXPECT_EQ(back.entries[i].values, r.imatrix.entries[i].values);
    EXPECT_EQ(back.entries[i].ncall, 3);
  }
  for (const auto& e : back.entries)
    if (e.name == "blk.2.ffn_down_exps.weight") {
      EXPECT_EQ(e.values.size(), 16u * 256u);
    }
  // A truncated file is an error naming it.
  fs::resize_file(d / "m.dat", fs::file_size(d / "m.dat") / 2);
  EXPECT_THROW(read_imatrix((d / "m.dat").string()), ConvertError);
}

ConvertOptions opts(const fs::path& out, const std::string& imatrix) {
  ConvertOptions o;
  o.source_dir = official_tiny().string();
  o.output = out.string();
  o.recipe = "mxfp4";
  o.threads = 2;
  o.imatrix = imatrix;
  return o;
}

TEST(Imatrix, ConvertBindsTheImatrixHashAndRejectsAMismatch) {
  const fs::path d = scratch_dir("imatrix_convert");
  std::string text;
  for (int i = 0; i < 20; ++i) text += "The router picks six experts for every token of the prompt. ";
  const auto r = imatrix::collect(direct_tiny().string(), text,
                                  {.chunk_tokens = 64, .max_chunks = 2, .threads = 2, .dataset = {}});
  write_imatrix((d / "good.dat").string(), r.imatrix);

  const ConvertResult plain = convert_checkpoint(opts(d / "plain.gguf", ""));
  const ConvertResult with = convert_checkpoint(opts(d / "with.gguf", (d / "good.dat").string()));
  EXPECT_NE(plain.artifact_id, with.artifact_id);
  EXPECT_EQ(with.imatrix_hash, file_hash((d / "good.dat").string()));
  const gguf::GgufFile f = gguf::GgufFile::open((d / "with.gguf").string());
  EXPECT_EQ(f.get<std::string>("ds4d.convert.imatrix_hash"), with.imatrix_hash);
  EXPECT_EQ(f.get<std::string>("ds4d.convert.artifact_id"), with.artifact_id);
  EXPECT_EQ(gguf::GgufFile::open((d / "plain.gguf").string()).get<std::string>("ds4d.convert.imatrix_hash"), "none");

  Imatrix bad = r.imatrix;
  for (auto& e : bad.entries)
    if (e.name == "blk.1.ffn_up_exps.weight") e.values.resize(e.values.size() / 2);
  write_imatrix((d / "bad.dat").string(), bad);
  try {
    convert_checkpoint(opts(d / "bad.gguf", (d / "bad.dat").string()));
    FAIL() << "a mismatched imatrix was accepted";
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.tensor(), "blk.1.ffn_up_exps.weight") << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.dat"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "bad.gguf"));
}

// Every tensor's bytes: those of the weighted types change with the imatrix, all others stay.
// The routed experts use their own slice of the entry: each expert of blk.0.ffn_gate_exps
// equals the plain loop quantize_rows(importance_from_imatrix(slice e)) over the source values
// (the direct GGUF's MXFP4 experts are exactly the checkpoint's FP4 values). Both conversions
// load and run in the engine within the ds4-tiny thresholds of the float-expert model.
TEST(Imatrix, ImportanceSteersTheWeightedQuantizersPerExpert) {
  const fs::path d = scratch_dir("imatrix_weighted");
  // IQ2_XXS, Q2_K and Q4_K experts in one small conversion (the rest as mxfp4 keeps it fast).
  std::ofstream(d / "r.toml") << "base = \"mxfp4\"\n[slots]\nrouted_down = \"q2_K\"\n[tensors]\n"
                                 "\"blk.0.ffn_gate_exps.weight\" = \"iq2_xxs\"\n"
                                 "\"blk.0.ffn_up_exps.weight\" = \"iq2_xxs\"\n"
                                 "\"blk.1.ffn_down_exps.weight\" = \"q4_K\"\n";
  std::string text;
  for (int i = 0; i < 20; ++i) text += "Each expert sees only the tokens the router sends to it. ";
  const auto col = imatrix::collect(direct_tiny().string(), text,
                                    {.chunk_tokens = 64, .max_chunks = 2, .threads = 2, .dataset = {}});
  write_imatrix((d / "im.dat").string(), col.imatrix);
  ConvertOptions o = opts(d / "plain.gguf", "");
  o.recipe = (d / "r.toml").string();
  const ConvertResult plain = convert_checkpoint(o);
  o.output = (d / "with.gguf").string();
  o.imatrix = (d / "im.dat").string();
  const ConvertResult with = convert_checkpoint(o);

  const gguf::GgufFile fp = gguf::GgufFile::open((d / "plain.gguf").string());
  const gguf::GgufFile fw = gguf::GgufFile::open((d / "with.gguf").string());
  size_t weighted = 0;
  std::set<quant::Type> types;
  for (const TensorResult& t : with.tensors) {
    if (t.file != "main") continue;
    const gguf::TensorInfo &a = fp.tensor(t.name), &b = fw.tensor(t.name);
    const bool same = std::memcmp(fp.data(a), fw.data(b), a.n_bytes) == 0;
    const bool steerable = quant::traits(t.type).quantize_weighted != nullptr;
    EXPECT_EQ(t.importance, steerable) << t.name;
    EXPECT_EQ(same, !steerable) << t.name;
    if (steerable) ++weighted, types.insert(t.type);
  }
  EXPECT_EQ(types, (std::set<quant::Type>{quant::Type::IQ2_XXS, quant::Type::Q2_K, quant::Type::Q4_K}));
  EXPECT_EQ(with.imatrix_targets_covered, weighted);
  EXPECT_EQ(plain.imatrix_targets_covered, 0u);

  const std::string name = "blk.0.ffn_gate_exps.weight";
  const Imatrix im = read_imatrix((d / "im.dat").string());
  const ImatrixEntry* entry = nullptr;
  for (const ImatrixEntry& e : im.entries)
    if (e.name == name) entry = &e;
  ASSERT_NE(entry, nullptr);
  const gguf::GgufFile src = gguf::GgufFile::open(direct_tiny().string());
  const gguf::TensorInfo &si = src.tensor(name), &wi = fw.tensor(name);
  const uint64_t ne0 = si.dims[0], per = si.dims[1], n_exp = si.dims[2];
  std::vector<float> f(ne0 * per);
  size_t distinct = 0;
  for (uint64_t e = 0; e < n_exp; ++e) {
    for (uint64_t r = 0; r < per; ++r)
      quant::traits(si.type).dequantize(src.data(si) + (e * per + r) * si.row_bytes(), f.data() + r * ne0,
                                        int64_t(ne0));
    const std::vector<float> imp = importance_from_imatrix(std::span<const float>(entry->values).subspan(e * ne0, ne0));
    const std::vector<std::byte> want = quantize_rows(wi.type, f.data(), per, ne0, imp.empty() ? nullptr : imp.data());
    const uint64_t eb = per * wi.row_bytes();
    EXPECT_EQ(0, std::memcmp(want.data(), fw.data(wi) + e * eb, eb)) << name << " expert " << e;
    distinct += !imp.empty() && std::memcmp(fp.data(fp.tensor(name)) + e * eb, fw.data(wi) + e * eb, eb) != 0;
  }
  EXPECT_GE(distinct, 6u);  // top-6 routing reaches at least six experts

  // The engine loads and runs both. Against the model with the exact (FP4) experts the 2-bit
  // experts of this random-weight model are far outside the implementation-agreement thresholds
  // of logit_agreement.hpp (Pearson ~0.96), so only a working model is required here (finite
  // logits, Pearson >= 0.9); the numbers are printed (docs/quant.md has the measurement on the
  // trained agent model).
  const auto p = prompt();
  auto ref = Model::load(direct_tiny(), {.threads = 2});
  Context cr(ref);
  const auto lr = cr.prefill(p);
  const std::vector<float> rv(lr.begin(), lr.end());
  for (const char* which : {"plain.gguf", "with.gguf"}) {
    auto m = Model::load(d / which, {.threads = 2});
    Context c(m);
    const auto lg = c.prefill(p);
    const std::vector<float> gv(lg.begin(), lg.end());
    double sxy = 0, sxx = 0, syy = 0, sdd = 0, mr = 0, mg = 0;
    for (size_t i = 0; i < rv.size(); ++i) mr += rv[i], mg += gv[i];
    mr /= double(rv.size()), mg /= double(rv.size());
    for (size_t i = 0; i < rv.size(); ++i) {
      ASSERT_TRUE(std::isfinite(gv[i])) << which << " logit " << i;
      const double a = rv[i] - mr, b = gv[i] - mg;
      sxy += a * b, sxx += a * a, syy += b * b, sdd += (gv[i] - rv[i]) * double(gv[i] - rv[i]);
    }
    const double pearson = sxy / std::sqrt(sxx * syy);
    std::printf("[ imatrix  ] %s vs FP4 experts: Pearson %.5f, rms/std %.5f\n", which, pearson, std::sqrt(sdd / sxx));
    EXPECT_GE(pearson, 0.9) << which;
  }
}

TEST(Imatrix, BootstrapScriptRuns) {
  const fs::path d = scratch_dir("imatrix_bootstrap");
  std::string text;
  for (int i = 0; i < 20; ++i) text += "Calibration text for the bootstrap: convert, collect, convert again. ";
  std::ofstream(d / "calib.txt") << text;
  const std::string cmd = "RECIPE=mxfp4 THREADS=2 CHUNK=64 DS4CTL=" + std::string(DS4D_DS4CTL_BINARY) + " " +
                          std::string(DS4D_SOURCE_DIR) + "/scripts/imatrix-bootstrap.sh " + official_tiny().string() +
                          " " + (d / "out").string() + " " + (d / "calib.txt").string() + " > " + (d / "log").string() +
                          " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(fs::exists(d / "out" / "imatrix.dat"));
  const gguf::GgufFile f = gguf::GgufFile::open((d / "out" / "model.gguf").string());
  EXPECT_EQ(f.get<std::string>("ds4d.convert.imatrix_hash"), file_hash((d / "out" / "imatrix.dat").string()));
}

}  // namespace
}  // namespace ds4::convert::test
