// Writes the GGUF fuzzer's seed corpus: small hand-made files covering every value type, nested
// arrays, a non-default alignment and each tensor type, plus a "skeleton" of every model given on
// the command line (all its metadata and tensor names and types, each tensor shrunk to one row of
// one block) so the fuzzer starts from realistic DS4 headers without megabytes of weights.
//   make_gguf_seeds OUT_DIR [MODEL.gguf ...]
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"

using namespace ds4::gguf;

namespace {

void save(const std::filesystem::path& p, const GgufWriter& w) {
  w.write(p.string());
  std::cout << p.string() << "\n";
}

GgufWriter skeleton_of(const GgufFile& f) {
  GgufWriter w;
  for (const KeyValue& kv : f.metadata()) {
    // Long string arrays (the vocabulary) are cut to their first 16 entries.
    if (const Array* a = std::get_if<Array>(&kv.value.v); a && a->items.size() > 16) {
      Array cut{a->elem_type, {a->items.begin(), a->items.begin() + 16}};
      w.set(kv.key, Value(std::move(cut)));
    } else {
      w.set(kv.key, kv.value);
    }
  }
  for (const TensorInfo& t : f.tensors()) {
    uint64_t block = ds4::quant::type_info(t.type).block_elems;
    w.add_tensor(t.name, t.type, {block}, [](std::span<std::byte> dst) {
      for (size_t i = 0; i < dst.size(); ++i) dst[i] = std::byte(i * 37 + 11);
    });
  }
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_gguf_seeds OUT_DIR [MODEL.gguf ...]\n";
    return 2;
  }
  std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  try {
    GgufWriter all;
    all.set("general.alignment", uint32_t{64});
    all.set("u8", uint8_t{1});
    all.set("i8", int8_t{-1});
    all.set("u16", uint16_t{2});
    all.set("i16", int16_t{-2});
    all.set("u32", uint32_t{3});
    all.set("i32", int32_t{-3});
    all.set("f32", 0.5f);
    all.set("bool", true);
    all.set("str", "<｜User｜>");
    all.set("u64", uint64_t{4});
    all.set("i64", int64_t{-4});
    all.set("f64", 0.25);
    all.set("arr", make_array<uint32_t>({0, 0, 4, 128}));
    all.set("nested", Value(Array{ValueType::ARRAY, {make_string_array({"a b", "Ġ t"}), make_array<float>({1.f})}}));
    std::vector<std::byte> zeros(4096);
    all.add_tensor("f32", ds4::quant::Type::F32, {4, 2}, std::span(zeros).first(32));
    all.add_tensor("f16", ds4::quant::Type::F16, {8}, std::span(zeros).first(16));
    all.add_tensor("q8_0", ds4::quant::Type::Q8_0, {32, 1}, std::span(zeros).first(34));
    all.add_tensor("q2_k", ds4::quant::Type::Q2_K, {256, 1, 1}, std::span(zeros).first(84));
    all.add_tensor("iq2_xxs", ds4::quant::Type::IQ2_XXS, {256, 1, 1, 1}, std::span(zeros).first(66));
    all.add_tensor("i32", ds4::quant::Type::I32, {6, 2}, std::span(zeros).first(48));
    save(out / "all_types.gguf", all);

    GgufWriter empty;
    save(out / "empty.gguf", empty);

    for (int i = 2; i < argc; ++i) {
      GgufFile f = GgufFile::open(argv[i]);
      save(out / ("skeleton_" + std::filesystem::path(argv[i]).stem().string() + ".gguf"), skeleton_of(f));
    }
  } catch (const std::exception& e) {
    std::cerr << "make_gguf_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
