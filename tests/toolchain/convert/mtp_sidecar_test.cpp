// The MTP sidecar: converted next to the main file, bound to the source fingerprint, and a
// sidecar made from another revision of the checkpoint rejected.
#include "toolchain/convert/mtp_sidecar.hpp"

#include <gtest/gtest.h>

#include "engine/gguf/gguf_reader.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"

namespace ds4::convert::test {
namespace {

const fs::path& official_with_mtp() {
  static const fs::path d = [] {
    const fs::path p = scratch_dir("official_mtp");
    export_official(direct_tiny().string(), p.string(), {.shards = 2, .mtp = true});
    return p;
  }();
  return d;
}

ConvertResult convert(const fs::path& src, const fs::path& out) {
  ConvertOptions o;
  o.source_dir = src.string();
  o.output = out.string();
  o.recipe = "mxfp4";
  o.threads = 2;
  return convert_checkpoint(o);
}

TEST(MtpSidecar, ConvertedBoundAndAccountedFor) {
  const fs::path dir = scratch_dir("mtp_ok");
  const ConvertResult r = convert(official_with_mtp(), dir / "m.gguf");
  ASSERT_EQ(r.sidecar, (dir / "m.mtp.gguf").string());
  for (const Invariant& i : r.invariants) EXPECT_TRUE(i.ok) << i.name << ": " << i.detail;
  bool saw = false;
  for (const Invariant& i : r.invariants) saw |= i.name == "mtp_sidecar";
  EXPECT_TRUE(saw);
  EXPECT_TRUE(r.skipped.empty());
  const gguf::GgufFile s = gguf::GgufFile::open(r.sidecar);
  const gguf::GgufFile m = gguf::GgufFile::open(r.output);
  const auto cat = mtp_catalogue(gguf::Ds4Dims::from_metadata(m));
  ASSERT_EQ(s.tensors().size(), cat.size());
  EXPECT_EQ(s.tensor("mtp.0.e_proj.weight").type, quant::Type::Q8_0);
  EXPECT_EQ(s.tensor("mtp.0.ffn_gate_exps.weight").type, quant::Type::MXFP4);
  EXPECT_EQ(s.tensor("mtp.0.exp_probs_b.bias").type, quant::Type::F32);
  EXPECT_EQ(m.find_tensor("mtp.0.e_proj.weight"), nullptr);  // not in the main file
  EXPECT_NO_THROW(verify_sidecar(r.output, r.sidecar));
}

TEST(MtpSidecar, SidecarFromAnotherRevisionIsRejected) {
  const fs::path dir = scratch_dir("mtp_other");
  const ConvertResult a = convert(official_with_mtp(), dir / "a.gguf");
  // "Another revision": the same checkpoint with one weight changed.
  const fs::path other = scratch_dir("mtp_other_src");
  fs::copy(official_with_mtp(), other, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  const std::string name = "layers.1.attn.wq_b.weight";
  rewrite_shard(other, shard_of(other, name), [&](auto& es) { entry(es, name).bytes[0] ^= std::byte{0x01}; });
  const ConvertResult b = convert(other, dir / "b.gguf");
  EXPECT_NE(a.source_fingerprint, b.source_fingerprint);
  EXPECT_NO_THROW(verify_sidecar(b.output, b.sidecar));
  try {
    verify_sidecar(a.output, b.sidecar);
    FAIL() << "a foreign sidecar was accepted";
  } catch (const ConvertError& e) {
    EXPECT_NE(std::string(e.what()).find("another source revision"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("b.mtp.gguf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(verify_sidecar(a.output, a.output), ConvertError);  // the main file is no sidecar
}

TEST(MtpSidecar, IncompleteMtpBlockIsAMissingTensor) {
  const fs::path src = scratch_dir("mtp_incomplete");
  fs::copy(official_with_mtp(), src, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove(src / "model.safetensors.index.json");
  const std::string name = "mtp.0.h_proj.weight";
  rewrite_shard(src, shard_of(official_with_mtp(), name), [&](auto& es) {
    es.erase(std::remove_if(
                 es.begin(), es.end(),
                 [&](const ShardEntry& e) { return e.name.rfind(name, 0) == 0 || e.name == "mtp.0.h_proj.scale"; }),
             es.end());
  });
  try {
    convert(src, src / "o.gguf");
    FAIL() << "an incomplete MTP block was accepted";
  } catch (const ConvertError& e) {
    EXPECT_EQ(e.tensor(), name) << e.what();
  }
}

}  // namespace
}  // namespace ds4::convert::test
