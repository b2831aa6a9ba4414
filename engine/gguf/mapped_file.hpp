#pragma once
// A read-only private mapping of a whole file. The GGUF reader parses the header straight from
// the mapping and hands out pointers into it for tensor data, so a 81 GiB model costs no copy and
// its pages come from the page cache on demand. MAP_POPULATE (prefault every page at map time) is
// an option for the daemon, which wants the whole model resident before it reports ready; it can
// also mlock() or CUDA-register the range given by data()/size().
#include <cstddef>
#include <cstdint>
#include <string>

namespace ds4::gguf {

struct MapOptions {
  bool populate = false;  // MAP_POPULATE: read every page in now instead of on first touch
};

class MappedFile {
 public:
  MappedFile() = default;
  // Throws GgufError (with the path) if the file cannot be opened, stat'ed or mapped.
  static MappedFile open(const std::string& path, MapOptions options = {});

  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::byte* data() const noexcept { return data_; }
  uint64_t size() const noexcept { return size_; }

 private:
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace ds4::gguf
