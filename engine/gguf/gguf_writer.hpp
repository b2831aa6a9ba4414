#pragma once
// GGUF v3 writer. Collects metadata (in insertion order) and tensor descriptions, then writes the
// file in one pass: header, tensor table with offsets laid out in insertion order, each tensor's
// data padded with zeros to general.alignment (default 32). This is the layout GGML's writer
// produces, so a GGML-written file read with GgufFile and written back is byte-identical.
//
// Tensor data comes either from a caller-owned span (which must stay alive until write()) or from
// a fill callback invoked once, in file order, with a buffer of exactly the tensor's size; the
// callback form lets the forge stream a multi-gigabyte model with one tensor in memory at a time.
// write() goes to "<path>.tmp" and renames, so a crash never leaves a half-written model behind.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_value.hpp"
#include "engine/quant/quant_type.hpp"

namespace ds4::gguf {

class GgufFile;

using TensorFill = std::function<void(std::span<std::byte> dst)>;

class GgufWriter {
 public:
  // Adds or replaces a metadata key (replacing keeps the original position).
  // "general.alignment" must be a power-of-two u32; it sets the data alignment.
  void set(std::string key, Value value);
  void add_tensor(std::string name, quant::Type type, std::vector<uint64_t> dims, std::span<const std::byte> data);
  void add_tensor(std::string name, quant::Type type, std::vector<uint64_t> dims, TensorFill fill);

  // Copies all metadata and tensors (data by reference) of an open file; `src` must outlive write().
  static GgufWriter copy_of(const GgufFile& src);

  uint32_t alignment() const { return alignment_; }
  // Total file size write() will produce.
  uint64_t file_size() const;

  // The file's fixed parts, for writers that place tensor data themselves (the converter
  // pwrites chunks in parallel and resumes): the header bytes (padded to the alignment) and
  // each tensor's absolute file offset, in insertion order.
  struct Layout {
    std::vector<std::byte> header;
    std::vector<uint64_t> tensor_offsets;
    uint64_t file_size = 0;
  };
  Layout layout() const;

  void write(const std::string& path) const;  // throws GgufError on I/O failure
  std::vector<std::byte> write_to_memory() const;

 private:
  struct Tensor {
    std::string name;
    quant::Type type;
    std::vector<uint64_t> dims;
    uint64_t n_bytes;
    std::span<const std::byte> data;
    TensorFill fill;
  };
  struct Entry {
    std::string key;
    Value value;
  };
  void add(Tensor t);
  std::vector<std::byte> header() const;  // everything up to the data section, padding included
  template <class Sink>
  void emit(Sink& sink) const;

  uint32_t alignment_ = 32;
  std::vector<Entry> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace ds4::gguf
