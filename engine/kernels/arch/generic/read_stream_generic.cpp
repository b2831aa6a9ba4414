// Portable memory-read probe: XOR-fold a buffer with eight independent 64-bit streams.
#include <cstring>

#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::detail {

uint64_t read_stream_generic(const uint8_t* p, size_t bytes) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 64 <= bytes; i += 64) {
    uint64_t v[8];
    std::memcpy(v, p + i, 64);
    for (int k = 0; k < 8; k++) acc[k] ^= v[k];
  }
  uint64_t r = 0;
  for (uint64_t v : acc) r ^= v;
  return r;
}

}  // namespace ds4::kernels::detail
