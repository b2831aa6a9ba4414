// The writer: a GGML-written file read and written back is byte-identical, every value type
// survives a write/read cycle, streamed (fill callback) tensors land where the reader expects.
#include "engine/gguf/gguf_writer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/gguf/gguf_reader.hpp"
#include "tests/engine/gguf/test_paths.hpp"

namespace ds4::gguf {
namespace {

std::vector<std::byte> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

std::string temp_path(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          (stem + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
           std::to_string(reinterpret_cast<uintptr_t>(&stem)) + ".gguf"))
      .string();
}

TEST(GgufWriter, Ds4TinyRoundTripsByteForByte) {
  const std::vector<std::byte> original = read_all(test::ds4_tiny_model());
  GgufFile f = GgufFile::open(test::ds4_tiny_model());
  GgufWriter w = GgufWriter::copy_of(f);
  EXPECT_EQ(w.file_size(), original.size());
  const std::vector<std::byte> mem = w.write_to_memory();
  ASSERT_EQ(mem.size(), original.size());
  EXPECT_TRUE(mem == original);

  const std::string path = temp_path("roundtrip");
  w.write(path);
  EXPECT_TRUE(read_all(path) == original);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(GgufWriter, EveryValueTypeSurvives) {
  GgufWriter w;
  w.set("u8", uint8_t{200});
  w.set("i8", int8_t{-100});
  w.set("u16", uint16_t{60000});
  w.set("i16", int16_t{-30000});
  w.set("u32", uint32_t{4000000000u});
  w.set("i32", int32_t{-2000000000});
  w.set("f32", 1.25f);
  w.set("bool", true);
  w.set("string", "héllo ｜DSML｜");
  w.set("u64", uint64_t{1} << 40);
  w.set("i64", int64_t{-1} << 40);
  w.set("f64", 0.1);
  w.set("u32s", make_array<uint32_t>({0, 0, 4, 128}));
  w.set("strs", make_string_array({"a b", "", "Ġt"}));
  Array nested{ValueType::ARRAY, {make_array<int32_t>({1, -2}), make_string_array({"x"})}};
  w.set("nested", Value(nested));
  w.set("u8", uint8_t{201});  // replacing keeps the position
  const std::vector<std::byte> img = w.write_to_memory();
  GgufFile f = GgufFile::from_memory(img);
  ASSERT_EQ(f.metadata().size(), 15u);
  EXPECT_EQ(f.metadata()[0].key, "u8");
  EXPECT_EQ(f.get<uint8_t>("u8"), 201);
  EXPECT_EQ(f.get<int8_t>("i8"), -100);
  EXPECT_EQ(f.get<uint16_t>("u16"), 60000);
  EXPECT_EQ(f.get<int16_t>("i16"), -30000);
  EXPECT_EQ(f.get<uint32_t>("u32"), 4000000000u);
  EXPECT_EQ(f.get<int32_t>("i32"), -2000000000);
  EXPECT_EQ(f.get<float>("f32"), 1.25f);
  EXPECT_EQ(f.get<bool>("bool"), true);
  EXPECT_EQ(f.get<std::string>("string"), "héllo ｜DSML｜");
  EXPECT_EQ(f.get<uint64_t>("u64"), uint64_t{1} << 40);
  EXPECT_EQ(f.get<int64_t>("i64"), int64_t{-1} << 40);
  EXPECT_EQ(f.get<double>("f64"), 0.1);
  EXPECT_EQ(f.get_array<uint32_t>("u32s"), (std::vector<uint32_t>{0, 0, 4, 128}));
  EXPECT_EQ(f.get_array<std::string>("strs"), (std::vector<std::string>{"a b", "", "Ġt"}));
  EXPECT_EQ(*f.find("nested"), Value(nested));
  // Negative values never convert to unsigned requests.
  EXPECT_THROW(f.get<uint64_t>("i64"), GgufError);
  EXPECT_THROW(f.get<int32_t>("u32"), GgufError);
  // A second write of what was read is identical.
  EXPECT_TRUE(GgufWriter::copy_of(f).write_to_memory() == img);
}

TEST(GgufWriter, TensorsAreAlignedAndStreamed) {
  GgufWriter w;
  w.set("general.alignment", uint32_t{64});
  std::vector<float> a(3, 2.5f);
  w.add_tensor("a", quant::Type::F32, {3}, std::as_bytes(std::span(a)));
  w.add_tensor("b", quant::Type::Q8_0, {64, 2}, [](std::span<std::byte> dst) {
    ASSERT_EQ(dst.size(), 2u * 2 * 34);
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = std::byte(i & 0xff);
  });
  const std::string path = temp_path("stream");
  w.write(path);
  GgufFile f = GgufFile::open(path);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  const TensorInfo& ta = f.tensor("a");
  const TensorInfo& tb = f.tensor("b");
  EXPECT_EQ(ta.offset, 0u);
  EXPECT_EQ(tb.offset, 64u);
  EXPECT_EQ(std::memcmp(f.data(ta), a.data(), 12), 0);
  EXPECT_EQ(f.data(tb)[135], std::byte{135});
  EXPECT_EQ(f.size(), f.data_offset() + 64 + 192);  // 136 bytes padded to 192
  std::filesystem::remove(path);
}

TEST(GgufWriter, RejectsInconsistentInput) {
  GgufWriter w;
  std::vector<std::byte> small(10);
  EXPECT_THROW(w.add_tensor("x", quant::Type::F32, {4}, small), GgufError);
  EXPECT_THROW(w.add_tensor("x", quant::Type::Q8_0, {16}, [](std::span<std::byte>) {}), std::invalid_argument);
  EXPECT_THROW(w.set("general.alignment", uint32_t{48}), GgufError);
  EXPECT_THROW(w.set("general.alignment", uint64_t{32}), GgufError);
  std::vector<std::byte> ok(16);
  w.add_tensor("y", quant::Type::F32, {4}, ok);
  EXPECT_THROW(w.add_tensor("y", quant::Type::F32, {4}, ok), GgufError);
  // A failing fill callback leaves no file behind.
  GgufWriter bad;
  bad.add_tensor("z", quant::Type::F32, {4}, [](std::span<std::byte>) { throw std::runtime_error("boom"); });
  const std::string path = temp_path("bad");
  EXPECT_THROW(bad.write(path), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace
}  // namespace ds4::gguf
