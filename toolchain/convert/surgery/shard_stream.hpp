#pragma once
// Writes one safetensors shard whose tensors come either from another mapped shard (copied byte
// for byte, never held whole in memory) or from bytes made here (edited routing rows, merged
// experts). Offsets are assigned back to back in the given order, so the result has no gaps by
// construction; check_contiguous (load_check.hpp) verifies it after the write anyway.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert::surgery {

struct OutTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<uint64_t> shape;
  const std::byte* src = nullptr;  // copied as is when set
  uint64_t n_bytes = 0;
  std::vector<std::byte> made;  // else these bytes
  std::string source;           // source tensor name (for the report / byte-identity checks)
};

// Writes path.tmp then renames; throws ConvertError on I/O failure or a size mismatch.
void write_stream_shard(const std::string& path, const std::vector<OutTensor>& tensors);

}  // namespace ds4::convert::surgery
