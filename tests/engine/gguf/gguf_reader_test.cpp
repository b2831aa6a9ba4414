// The reader on the real GGML-written ds4-tiny model: header fields, typed metadata accessors
// with their leniency and their error messages, the tensor table and data pointers.
#include "engine/gguf/gguf_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/gguf/test_paths.hpp"

namespace ds4::gguf {
namespace {

using test::ds4_tiny_model;

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const GgufError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GgufReader, ReadsDs4TinyHeader) {
  GgufFile f = GgufFile::open(ds4_tiny_model());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.metadata().size(), 50u);
  EXPECT_EQ(f.tensors().size(), 181u);
  EXPECT_EQ(f.data_offset(), 40160u);  // 40147-byte header padded to 32
  EXPECT_EQ(f.size(), 17189216u);
  EXPECT_EQ(f.metadata().front().key, "general.architecture");
  EXPECT_EQ(f.get<std::string>("general.architecture"), "deepseek4");
  EXPECT_EQ(f.get<uint32_t>("deepseek4.block_count"), 6u);
  EXPECT_EQ(f.get<uint64_t>("deepseek4.context_length"), 1048576u);
  EXPECT_FLOAT_EQ(f.get<float>("deepseek4.expert_weights_scale"), 1.5f);
  EXPECT_DOUBLE_EQ(f.get<double>("deepseek4.rope.freq_base"), 10000.0);
  EXPECT_TRUE(f.get<bool>("deepseek4.expert_weights_norm"));
  EXPECT_EQ(f.get_array<uint32_t>("deepseek4.attention.compress_ratios"),
            (std::vector<uint32_t>{0, 0, 4, 128, 4, 128}));
  EXPECT_EQ(f.get_array<float>("deepseek4.swiglu_clamp_exp"), std::vector<float>(6, 10.0f));
  auto tokens = f.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 1024u);
  EXPECT_EQ(tokens[0], "<｜begin▁of▁sentence｜>");
  EXPECT_EQ(tokens[1023], "｜DSML｜");
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.merges").size(), 761u);
  EXPECT_EQ(f.get_array<int32_t>("tokenizer.ggml.token_type")[0], 3);
}

TEST(GgufReader, IntegerLeniencyConvertsWhenTheValueFits) {
  GgufFile f = GgufFile::open(ds4_tiny_model());
  // Stored as u32, read as u64 / i32 / i64 ("u32 or u64" keys).
  EXPECT_EQ(f.get<uint64_t>("deepseek4.rope.scaling.original_context_length"), 65536u);
  EXPECT_EQ(f.get<int32_t>("deepseek4.rope.scaling.original_context_length"), 65536);
  EXPECT_EQ(f.get<int64_t>("deepseek4.attention.sliding_window"), 128);
  // Stored as u64 1048576: does not fit u16.
  EXPECT_NE(
      error_of([&] {
        f.get<uint16_t>("deepseek4.context_length");
      }).find("metadata key 'deepseek4.context_length': expected u16, found u64 value 1048576 which does not fit"),
      std::string::npos);
  EXPECT_EQ(f.get_array<uint64_t>("deepseek4.attention.compress_ratios")[3], 128u);
}

TEST(GgufReader, TypeErrorsNameKeyExpectedAndActualType) {
  GgufFile f = GgufFile::open(ds4_tiny_model());
  std::string e = error_of([&] { f.get<std::string>("deepseek4.block_count"); });
  EXPECT_NE(e.find(ds4_tiny_model()), std::string::npos) << e;
  EXPECT_NE(e.find("metadata key 'deepseek4.block_count': expected string, found u32"), std::string::npos) << e;
  EXPECT_NE(e.find("at byte "), std::string::npos) << e;
  e = error_of([&] { f.get<uint32_t>("general.name"); });
  EXPECT_NE(e.find("expected u32, found string"), std::string::npos) << e;
  e = error_of([&] { f.get<float>("deepseek4.expert_weights_norm"); });
  EXPECT_NE(e.find("expected float (f32 or f64), found bool"), std::string::npos) << e;
  e = error_of([&] { f.get_array<uint32_t>("tokenizer.ggml.tokens"); });
  EXPECT_NE(e.find("expected u32 array, found string array"), std::string::npos) << e;
  e = error_of([&] { f.get<uint32_t>("deepseek4.no_such_key"); });
  EXPECT_NE(e.find("missing metadata key 'deepseek4.no_such_key'"), std::string::npos) << e;
  EXPECT_EQ(f.get_or<uint32_t>("deepseek4.no_such_key", 7), 7u);
}

TEST(GgufReader, TensorTableAndData) {
  GgufFile f = GgufFile::open(ds4_tiny_model());
  const TensorInfo& emb = f.tensor("token_embd.weight");
  EXPECT_EQ(emb.type, quant::Type::F16);
  EXPECT_EQ(emb.dims, (std::vector<uint64_t>{256, 1024}));
  EXPECT_EQ(emb.offset, 0u);
  EXPECT_EQ(emb.n_bytes, 256u * 1024 * 2);
  EXPECT_EQ(f.data(emb), f.base() + 40160);

  const TensorInfo& gate = f.tensor("blk.0.ffn_gate_exps.weight");
  EXPECT_EQ(gate.type, quant::Type::IQ2_XXS);
  EXPECT_EQ(gate.dims, (std::vector<uint64_t>{256, 256, 16}));
  EXPECT_EQ(gate.n_bytes, 256u * 16 * 66);
  EXPECT_EQ(gate.row_bytes(), 66u);
  EXPECT_EQ(gate.offset, 1461088u);

  const TensorInfo& out = f.tensor("output.weight");
  EXPECT_EQ(out.type, quant::Type::Q8_0);
  EXPECT_EQ(f.data(out) + out.n_bytes, f.base() + f.size());  // last tensor ends the file

  const TensorInfo& tid = f.tensor("blk.2.ffn_gate_tid2eid.weight");
  EXPECT_EQ(tid.type, quant::Type::I32);
  const auto* ids = reinterpret_cast<const int32_t*>(f.data(tid));
  for (int i = 0; i < 6 * 1024; ++i) {
    ASSERT_GE(ids[i], 0);
    ASSERT_LT(ids[i], 16);
  }
  EXPECT_EQ(f.find_tensor("blk.3.ffn_gate_tid2eid.weight"), nullptr);
  std::string e = error_of([&] { f.tensor("blk.9.attn_norm.weight"); });
  EXPECT_NE(e.find("missing tensor 'blk.9.attn_norm.weight'"), std::string::npos) << e;
}

TEST(GgufReader, PopulateOptionMapsTheSameBytes) {
  GgufFile a = GgufFile::open(ds4_tiny_model());
  GgufFile b = GgufFile::open(ds4_tiny_model(), MapOptions{.populate = true});
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.base(), b.base(), a.size()), 0);
}

TEST(GgufReader, MissingFileIsAGgufError) {
  std::string e = error_of([] { GgufFile::open("/nonexistent/model.gguf"); });
  EXPECT_NE(e.find("/nonexistent/model.gguf: cannot open"), std::string::npos) << e;
}

}  // namespace
}  // namespace ds4::gguf
