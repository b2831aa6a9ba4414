// Model::load must reject GGUF files whose metadata or tensors disagree with the DS4 layout,
// with a message that names the offending key or tensor. Each case rewrites the ds4-tiny model
// with one change.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/model/model.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4 {
namespace {

using Edit = std::function<void(gguf::GgufWriter&, const gguf::GgufFile&)>;

// Copies the tiny model, letting `edit` change metadata, and optionally replaces one tensor's
// shape/type (`tensor_override`: the name; `shape` / `type` the new values, data zero-filled).
std::filesystem::path rewrite(const std::string& tag, const Edit& edit, const std::string& skip_tensor = "",
                              const std::string& override_tensor = "", std::vector<uint64_t> shape = {},
                              quant::Type type = quant::Type::F32) {
  const auto src = gguf::GgufFile::open((test::tiny_vectors_dir() / "model.gguf").string());
  gguf::GgufWriter w;
  for (const auto& kv : src.metadata()) w.set(kv.key, kv.value);
  for (const auto& t : src.tensors()) {
    if (t.name == skip_tensor) continue;
    if (t.name == override_tensor) {
      w.add_tensor(t.name, type, shape,
                   [](std::span<std::byte> dst) { std::fill(dst.begin(), dst.end(), std::byte{0}); });
      continue;
    }
    w.add_tensor(t.name, t.type, t.dims, src.bytes(t));
  }
  if (edit) edit(w, src);
  const auto path = std::filesystem::path(::testing::TempDir()) / ("ds4_tiny_" + tag + ".gguf");
  w.write(path.string());
  return path;
}

void expect_load_error(const std::filesystem::path& p, const std::string& must_mention) {
  try {
    Model::load(p, LoadOptions{});
    ADD_FAILURE() << "loaded a broken model " << p;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(must_mention), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

TEST(LoadErrors, UnchangedCopyLoads) {
  const auto p = rewrite("same", {});
  auto m = Model::load(p, LoadOptions{});
  EXPECT_EQ(m->info().n_layer, 6u);
  EXPECT_EQ(m->info().n_embd, 256u);
  EXPECT_EQ(m->info().compress_ratios, (std::vector<uint32_t>{0, 0, 4, 128, 4, 128}));
  EXPECT_EQ(m->info().expert_types, "iq2_xxs/iq2_xxs/q2_K");
  EXPECT_GT(m->info().weight_bytes, m->info().active_weight_bytes_per_token);
  std::filesystem::remove(p);
}

TEST(LoadErrors, MissingTensorIsNamed) {
  expect_load_error(rewrite("missing", {}, "blk.3.attn_compressor_kv.weight"), "blk.3.attn_compressor_kv.weight");
}

TEST(LoadErrors, WrongShapeIsNamed) {
  expect_load_error(rewrite("shape", {}, "", "blk.2.attn_q_b.weight", {128, 1024}, quant::Type::Q8_0),
                    "blk.2.attn_q_b.weight");
}

TEST(LoadErrors, WrongTypeIsNamed) {
  expect_load_error(rewrite("type", {}, "", "blk.0.attn_norm.weight", {256}, quant::Type::F16),
                    "blk.0.attn_norm.weight");
}

TEST(LoadErrors, InconsistentMetadataIsNamed) {
  // A layer count that the tensors do not have.
  expect_load_error(
      rewrite("layers", [](gguf::GgufWriter& w,
                           const gguf::GgufFile&) { w.set("deepseek4.block_count", gguf::Value(uint32_t(7))); }),
      "deepseek4.block_count");
  // An embedding width that disagrees with every tensor.
  expect_load_error(
      rewrite("embd", [](gguf::GgufWriter& w,
                         const gguf::GgufFile&) { w.set("deepseek4.embedding_length", gguf::Value(uint32_t(512))); }),
      "token_embd.weight");
  // A compression ratio the graph does not know.
  expect_load_error(
      rewrite("ratio",
              [](gguf::GgufWriter& w, const gguf::GgufFile&) {
                w.set("deepseek4.attention.compress_ratios", gguf::make_array<uint32_t>({0, 0, 4, 64, 4, 128}));
              }),
      "compress_ratios[3]");
  // Group-limited routing is not part of DS4 Flash.
  expect_load_error(
      rewrite("groups", [](gguf::GgufWriter& w,
                           const gguf::GgufFile&) { w.set("deepseek4.expert_group_count", gguf::Value(uint32_t(4))); }),
      "expert_group_count");
}

TEST(LoadErrors, MissingKeyIsNamed) {
  // Rewrite without the key: copy every key but one.
  const auto src = gguf::GgufFile::open((test::tiny_vectors_dir() / "model.gguf").string());
  gguf::GgufWriter w;
  for (const auto& kv : src.metadata())
    if (kv.key != "deepseek4.attention.indexer.top_k") w.set(kv.key, kv.value);
  for (const auto& t : src.tensors()) w.add_tensor(t.name, t.type, t.dims, src.bytes(t));
  const auto p = std::filesystem::path(::testing::TempDir()) / "ds4_tiny_nokey.gguf";
  w.write(p.string());
  expect_load_error(p, "deepseek4.attention.indexer.top_k");
}

}  // namespace
}  // namespace ds4
