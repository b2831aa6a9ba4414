#pragma once
// GGUF reader. Opens a GGUF v3 file (v2, whose layout is identical for little-endian files, is
// accepted read-only) through a private read-only mmap, parses and validates the header, every
// metadata value and the tensor table, and then serves typed metadata lookups and pointers to
// tensor data inside the mapping. Nothing is copied but the header.
//
// Validation is complete before open() returns: a GgufFile that exists is well-formed. Every
// malformed input (bad magic or version, truncated header, strings or arrays running past the
// end, absurd counts, unknown value or tensor types, dimension overflow, duplicate keys or tensor
// names, misaligned, out-of-bounds or overlapping tensor data) throws GgufError naming the file,
// the byte offset and, where one is involved, the key or tensor. The parser never reads outside
// the buffer, whatever the input; fuzz/gguf_reader_fuzz.cpp checks that claim.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_value.hpp"
#include "engine/gguf/mapped_file.hpp"
#include "engine/quant/quant_type.hpp"

namespace ds4::gguf {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;

struct KeyValue {
  std::string key;
  Value value;
  uint64_t offset = 0;  // file offset of the key's length field (for error messages)
};

struct TensorInfo {
  std::string name;
  quant::Type type = quant::Type::F32;
  std::vector<uint64_t> dims;  // ne0 first (ne0 is the contiguous dimension)
  uint64_t offset = 0;         // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t info_offset = 0;  // file offset of this entry in the tensor table

  uint64_t rows() const { return n_elements / dims[0]; }
  uint64_t row_bytes() const { return n_bytes / rows(); }
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws GgufError on any problem.
  static GgufFile open(const std::string& path, MapOptions options = {});
  // Parses a GGUF image already in memory; `bytes` must outlive the GgufFile. `name` stands in
  // for the path in error messages. Used by tests and the fuzzer.
  static GgufFile from_memory(std::span<const std::byte> bytes, std::string name = "<memory>");

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  // The whole file image (mapping base and length), e.g. for mlock or CUDA host registration.
  const std::byte* base() const { return base_; }
  uint64_t size() const { return size_; }

  // Metadata in file order.
  const std::vector<KeyValue>& metadata() const { return kvs_; }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Value* find(std::string_view key) const;
  // Typed lookup; throws GgufError naming the key if it is missing or of an incompatible type.
  template <class T>
  T get(std::string_view key) const;
  template <class T>
  T get_or(std::string_view key, T fallback) const {
    return has(key) ? get<T>(key) : fallback;
  }
  // Array lookup with element conversion (same leniency as get).
  template <class T>
  std::vector<T> get_array(std::string_view key) const;

  // Tensors in file (table) order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name) const;  // throws GgufError if absent
  const std::byte* data(const TensorInfo& t) const { return base_ + data_offset_ + t.offset; }
  std::span<const std::byte> bytes(const TensorInfo& t) const { return {data(t), t.n_bytes}; }

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

 private:
  GgufFile() = default;
  void parse();
  const KeyValue& require(std::string_view key) const;

  std::string path_;
  MappedFile map_;
  const std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

template <class T>
T GgufFile::get(std::string_view key) const {
  const KeyValue& kv = require(key);
  try {
    return kv.value.as<T>(key);
  } catch (const GgufError& e) {
    throw GgufError(path_, kv.offset, e.detail());
  }
}

template <class T>
std::vector<T> GgufFile::get_array(std::string_view key) const {
  const KeyValue& kv = require(key);
  try {
    return kv.value.as_vector<T>(key);
  } catch (const GgufError& e) {
    throw GgufError(path_, kv.offset, e.detail());
  }
}

}  // namespace ds4::gguf
