// Malformed official checkpoints: each gives a ConvertError naming the file and the tensor,
// and nothing is written at the output path.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"

namespace ds4::convert::test {
namespace {

// Converts `src` and returns the error; fails the test if the conversion succeeds or leaves
// an output behind.
ConvertError convert_error(const fs::path& src) {
  const fs::path out = src / "out.gguf";
  ConvertOptions o;
  o.source_dir = src.string();
  o.output = out.string();
  o.recipe = "mxfp4";
  try {
    convert_checkpoint(o);
  } catch (const ConvertError& e) {
    EXPECT_FALSE(fs::exists(out)) << "an output was written despite the error";
    return e;
  }
  ADD_FAILURE() << "conversion of " << src << " succeeded";
  return ConvertError("", "", "");
}

void expect_names(const ConvertError& e, const std::string& file_part, const std::string& tensor,
                  const std::string& what) {
  const std::string m = e.what();
  EXPECT_NE(m.find(file_part), std::string::npos) << m;
  EXPECT_NE(m.find("'" + tensor + "'"), std::string::npos) << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
  EXPECT_EQ(e.tensor(), tensor) << m;
}

TEST(MalformedCheckpoint, MissingShard) {
  const fs::path d = copy_of_official("missing_shard");
  fs::remove(d / "model-00002-of-00003.safetensors");
  const ConvertError e = convert_error(d);
  EXPECT_NE(std::string(e.what()).find("model-00002-of-00003.safetensors"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("missing shard"), std::string::npos) << e.what();
  EXPECT_FALSE(e.tensor().empty()) << e.what();  // a tensor the index places in it
  EXPECT_EQ(shard_of(d, e.tensor()), "model-00002-of-00003.safetensors");
}

TEST(MalformedCheckpoint, WrongDtype) {
  const fs::path d = copy_of_official("wrong_dtype");
  const std::string name = "layers.1.attn_norm.weight", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) { entry(es, name).dtype = Dtype::I32; });  // same byte size as F32
  expect_names(convert_error(d), shard, name, "wrong dtype I32");
}

TEST(MalformedCheckpoint, WrongExpertDtype) {
  const fs::path d = copy_of_official("wrong_expert_dtype");
  const std::string name = "layers.4.ffn.experts.9.w3.weight", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) { entry(es, name).dtype = Dtype::U8; });
  expect_names(convert_error(d), shard, name, "expected I8 (packed FP4");
}

TEST(MalformedCheckpoint, ShapeMismatch) {
  const fs::path d = copy_of_official("shape_mismatch");
  const std::string name = "layers.2.attn.wq_a.weight", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) {
    auto& e = entry(es, name);
    std::swap(e.shape[0], e.shape[1]);  // same bytes, transposed shape
  });
  expect_names(convert_error(d), shard, name, "shape mismatch");
}

TEST(MalformedCheckpoint, TruncatedFile) {
  const fs::path d = copy_of_official("truncated");
  const fs::path last = d / "model-00003-of-00003.safetensors";
  fs::resize_file(last, fs::file_size(last) - 1000);
  const ConvertError e = convert_error(d);
  EXPECT_NE(std::string(e.what()).find("model-00003-of-00003.safetensors"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  EXPECT_FALSE(e.tensor().empty()) << e.what();
}

TEST(MalformedCheckpoint, DuplicateTensor) {
  const fs::path d = copy_of_official("duplicate");
  const std::string name = "layers.0.ffn.gate.weight", home = shard_of(d, name);
  const std::string other = home == "model-00001-of-00003.safetensors" ? "model-00002-of-00003.safetensors"
                                                                       : "model-00001-of-00003.safetensors";
  ShardEntry copy;
  rewrite_shard(d, home, [&](auto& es) { copy = entry(es, name); });
  rewrite_shard(d, other, [&](auto& es) { es.push_back(copy); });
  const ConvertError e = convert_error(d);
  expect_names(e, ".safetensors", name, "duplicate tensor");
  EXPECT_NE(std::string(e.what()).find(home), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find(other), std::string::npos) << e.what();
}

TEST(MalformedCheckpoint, NanScale) {
  const fs::path d = copy_of_official("nan_scale");
  const std::string name = "layers.2.ffn.experts.5.w2.scale", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) { entry(es, name).bytes[7] = std::byte{0xff}; });
  expect_names(convert_error(d), shard, name, "NaN scale");
}

TEST(MalformedCheckpoint, NanFp8ScaleOfADenseWeight) {
  const fs::path d = copy_of_official("nan_fp8_scale");
  const std::string name = "layers.5.attn.wo_b.scale", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) { entry(es, name).bytes[0] = std::byte{0xff}; });
  expect_names(convert_error(d), shard, name, "NaN scale");
}

TEST(MalformedCheckpoint, MissingTensor) {
  const fs::path d = copy_of_official("missing_tensor");
  fs::remove(d / "model.safetensors.index.json");  // no index: the shards are all there is
  const std::string name = "layers.3.attn.compressor.norm.weight";
  rewrite_shard(d, shard_of(official_tiny(), name), [&](auto& es) {
    es.erase(std::remove_if(es.begin(), es.end(), [&](const ShardEntry& e) { return e.name == name; }), es.end());
  });
  expect_names(convert_error(d), d.string(), name, "missing tensor");
}

TEST(MalformedCheckpoint, UnknownTensorHasNoTarget) {
  const fs::path d = copy_of_official("unknown_tensor");
  fs::remove(d / "model.safetensors.index.json");
  rewrite_shard(d, "model-00001-of-00003.safetensors", [&](auto& es) {
    es.push_back({"layers.0.attn.extra_bias", Dtype::F32, {4}, std::vector<std::byte>(16)});
  });
  expect_names(convert_error(d), "model-00001-of-00003.safetensors", "layers.0.attn.extra_bias", "lands in no target");
}

}  // namespace
}  // namespace ds4::convert::test
