#pragma once
// Shared fixture for the converter tests: the ds4-tiny model exported once to the official
// format (3 shards) in a temporary folder, helpers to copy it and rewrite one tensor's entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/export_official.hpp"
#include "toolchain/convert/safetensors.hpp"

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

// Removes the scratch folders of test processes that no longer run (killed at a timeout, their
// TearDown never ran; they had piled up to 1.6 GB in /tmp). A folder whose pid is alive -- maybe
// another process that reused the number -- or written to in the last two hours (a test in
// another pid namespace sharing /tmp) is left alone.
inline void remove_stale_scratch() {
  std::error_code ec;
  const std::string stem = "ds4_convert_test_";
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    const size_t end = name.find('_', stem.size());
    if (end == std::string::npos || end == stem.size()) continue;
    const std::string pid = name.substr(stem.size(), end - stem.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    const auto age = fs::file_time_type::clock::now() - fs::last_write_time(e.path(), ec);
    if (!ec && age > std::chrono::hours(2) && !fs::exists(fs::path("/proc") / pid, ec)) fs::remove_all(e.path(), ec);
  }
}

inline fs::path scratch_dir(const std::string& what) {
  static const bool cleaned = (remove_stale_scratch(), true);
  (void)cleaned;
  const fs::path p = fs::temp_directory_path() / (scratch_prefix() + what);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// A copy of a DS4 GGUF with its routed experts re-quantized to MXFP4, so that every expert
// value is exactly representable in the official FP4 format (the "direct GGUF" of a model).
inline void write_with_mxfp4_experts(const std::string& src_path, const fs::path& out) {
  const gguf::GgufFile src = gguf::GgufFile::open(src_path);
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
  w.write(out.string());
}

// The direct GGUF of ds4-tiny: its weights are what the official-format fixture holds; a
// conversion is compared against it with the engine.
inline const fs::path& direct_tiny() {
  static const fs::path path = [] {
    const fs::path p = scratch_dir("direct_tiny") / "direct.gguf";
    write_with_mxfp4_experts(ds4_tiny_model(), p);
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
