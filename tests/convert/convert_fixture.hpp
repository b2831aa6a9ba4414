#pragma once
// Shared fixture for the converter tests: the ds4-tiny model exported once to the official
// format (3 shards) in a temporary folder, helpers to copy it and rewrite one tensor's entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "engine/convert/converter.hpp"
#include "engine/convert/export_official.hpp"
#include "engine/convert/safetensors.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::convert::test {

namespace fs = std::filesystem;

inline std::string ds4_tiny_dir() {
  if (const char* e = std::getenv("DS4D_DS4_VECTORS")) return e;
  return DS4D_DS4_VECTORS_DEFAULT;
}
inline std::string ds4_tiny_model() { return ds4_tiny_dir() + "/model.gguf"; }

inline std::string scratch_prefix() { return "ds4_convert_test_" + std::to_string(::getpid()) + "_"; }

// Removes this process's scratch folders when the test program ends (each ctest process makes
// its own fixture copies; left behind they add up to gigabytes).
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec))
      if (e.path().filename().string().rfind(scratch_prefix(), 0) == 0) fs::remove_all(e.path(), ec);
  }
};
inline ::testing::Environment* const kScratchCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

inline fs::path scratch_dir(const std::string& what) {
  const fs::path p = fs::temp_directory_path() / (scratch_prefix() + what);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The "direct GGUF": ds4-tiny with its routed experts re-quantized to MXFP4, so that every
// expert value is exactly representable in the official FP4 format. Its weights are what the
// official-format fixture holds; a conversion is compared against it with the engine.
inline const fs::path& direct_tiny() {
  static const fs::path path = [] {
    const fs::path p = scratch_dir("direct_tiny") / "direct.gguf";
    const gguf::GgufFile src = gguf::GgufFile::open(ds4_tiny_model());
    gguf::GgufWriter w;
    for (const gguf::KeyValue& kv : src.metadata()) w.set(kv.key, kv.value);
    std::vector<std::vector<std::byte>> keep;
    for (const gguf::TensorInfo& t : src.tensors()) {
      if (t.dims.size() != 3) {
        w.add_tensor(t.name, t.type, t.dims, src.bytes(t));
        continue;
      }
      std::vector<float> f(t.n_elements);
      for (uint64_t r = 0; r < t.rows(); ++r)
        quant::traits(t.type).dequantize(src.data(t) + r * t.row_bytes(), f.data() + r * t.dims[0], int64_t(t.dims[0]));
      keep.push_back(quantize_rows(quant::Type::MXFP4, f.data(), t.rows(), t.dims[0]));
      w.add_tensor(t.name, quant::Type::MXFP4, t.dims, std::span<const std::byte>(keep.back()));
    }
    w.write(p.string());
    return p;
  }();
  return path;
}

// The official-format export of the direct GGUF (3 shards), made once per test binary.
inline const fs::path& official_tiny() {
  static const fs::path dir = [] {
    const fs::path d = scratch_dir("official_tiny");
    export_official(direct_tiny().string(), d.string(), {3});
    return d;
  }();
  return dir;
}

inline fs::path copy_of_official(const std::string& what) {
  const fs::path d = scratch_dir(what);
  fs::copy(official_tiny(), d, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return d;
}

// The shard file the index places `tensor` in.
inline std::string shard_of(const fs::path& dir, const std::string& tensor) {
  std::ifstream in(dir / "model.safetensors.index.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return std::string(boost::json::parse(ss.str()).at("weight_map").at(tensor).as_string());
}

// Rewrites the shard holding `tensor`, letting `edit` change its entries (all of them).
inline void rewrite_shard(const fs::path& dir, const std::string& file,
                          const std::function<void(std::vector<ShardEntry>&)>& edit) {
  std::vector<ShardEntry> entries;
  {
    auto s = Shard::open((dir / file).string());
    std::vector<const SourceTensor*> ts;
    for (const SourceTensor& t : s->tensors()) ts.push_back(&t);
    std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->file_offset < b->file_offset; });
    for (const SourceTensor* t : ts)
      entries.push_back({t->name, t->dtype, t->shape, std::vector<std::byte>(t->data, t->data + t->n_bytes)});
  }
  edit(entries);
  write_shard((dir / file).string(), entries);
}

inline ShardEntry& entry(std::vector<ShardEntry>& es, const std::string& name) {
  for (ShardEntry& e : es)
    if (e.name == name) return e;
  throw std::runtime_error("no entry " + name);
}

}  // namespace ds4::convert::test
