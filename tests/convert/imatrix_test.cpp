// Importance matrix: the engine hook changes no logits, the collector counts every routed and
// dense input row, the GGML file round-trips, convert binds the imatrix hash into the artifact
// id and rejects an imatrix that does not fit the model, and the bootstrap script runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "engine/convert/convert_error.hpp"
#include "engine/convert/converter.hpp"
#include "engine/convert/imatrix_file.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/imatrix/imatrix_collector.hpp"
#include "engine/model/model.hpp"
#include "tests/convert/convert_fixture.hpp"
#include "tests/model/tiny_cases.hpp"

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
    if (e.name == "blk.2.ffn_down_exps.weight") EXPECT_EQ(e.values.size(), 16u * 256u);
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
  const auto r = imatrix::collect(direct_tiny().string(), text, {.chunk_tokens = 64, .max_chunks = 2, .threads = 2});
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
