#pragma once
// Byte-level GGUF image builder for tests: unlike GgufWriter it will happily write malformed
// files (wrong counts, bad types, overlapping offsets), which is what the reader tests need.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ds4::gguf::test {

struct RawGguf {
  std::vector<std::byte> b;

  template <class T>
  RawGguf& put(T x) {
    const auto* p = reinterpret_cast<const std::byte*>(&x);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  RawGguf& str(const std::string& s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    b.insert(b.end(), p, p + s.size());
    return *this;
  }
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    put<uint32_t>(0x46554747);
    put<uint32_t>(version);
    put<uint64_t>(n_tensors);
    return put<uint64_t>(n_kv);
  }
  RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put<uint32_t>(v); }
  RawGguf& kv_str(const std::string& key, const std::string& v) { return str(key).put<uint32_t>(8).str(v); }
  // One tensor-table entry.
  RawGguf& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  RawGguf& pad(uint64_t align = 32) {
    while (b.size() % align) b.push_back(std::byte{0});
    return *this;
  }
  RawGguf& zeros(uint64_t n) {
    b.insert(b.end(), n, std::byte{0});
    return *this;
  }
  size_t size() const { return b.size(); }
};

}  // namespace ds4::gguf::test
