#pragma once
// Safetensors checkpoints: the official release's folder of shards, mapped read-only; tensor data
// is served as pointers into the mapping and release() drops pages the converter has finished
// with. Every shard and the index are validated at open, naming the file and tensor at fault.
// The shard format and the checks: docs/toolchain.md §safetensors-shards.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::convert {

enum class Dtype { F32, F16, BF16, F8_E4M3, F8_E8M0, I8, U8, I32, I64 };
std::string_view dtype_name(Dtype d);
size_t dtype_size(Dtype d);

struct SourceTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<uint64_t> shape;  // safetensors order: outermost first (row-major [out, in])
  const std::byte* data = nullptr;
  uint64_t n_bytes = 0;
  uint64_t file_offset = 0;  // absolute offset of the data in its shard
  size_t shard = 0;          // index into Checkpoint::shards()

  uint64_t n_elements() const;
};

class Shard {
 public:
  // Maps and parses one shard. Throws ConvertError naming the file (and tensor) on any problem.
  static std::unique_ptr<Shard> open(const std::string& path);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  std::string_view header_json() const;
  const std::vector<SourceTensor>& tensors() const { return tensors_; }
  // Tells the kernel the pages of [offset, offset+len) are no longer needed (MADV_DONTNEED).
  void release(uint64_t offset, uint64_t len) const;

 private:
  Shard() = default;
  std::string path_;
  const std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t header_len_ = 0;
  std::vector<SourceTensor> tensors_;
};

class Checkpoint {
 public:
  // Opens a checkpoint folder: the shards listed by model.safetensors.index.json when present
  // (a listed shard that is missing, a tensor the index places in a shard that lacks it, or a
  // shard holding a tensor the index places elsewhere are errors), else every *.safetensors
  // file in the folder. A tensor name found in two shards is an error naming both.
  static Checkpoint open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<std::unique_ptr<Shard>>& shards() const { return shards_; }
  const SourceTensor* find(std::string_view name) const;
  // All tensors, sorted by name.
  std::vector<const SourceTensor*> tensors() const;
  uint64_t total_bytes() const;  // sum of tensor data bytes
  const std::string& shard_path(const SourceTensor& t) const { return shards_[t.shard]->path(); }
  void release(const SourceTensor& t) const { shards_[t.shard]->release(t.file_offset, t.n_bytes); }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, const SourceTensor*, std::less<>> by_name_;
};

// Writes one shard (used by the fixture generator and the W4A16 export). `tensors` give name,
// dtype, shape and the bytes; the order is kept. Writes to path.tmp and renames.
struct ShardEntry {
  std::string name;
  Dtype dtype;
  std::vector<uint64_t> shape;
  std::vector<std::byte> bytes;
};
void write_shard(const std::string& path, const std::vector<ShardEntry>& tensors);

}  // namespace ds4::convert
