// Scalar memory-read probe and ISA dispatch (see read_stream.hpp).
#include "engine/kernels/read_stream.hpp"

#include <cstring>

namespace ds4::kernels {

uint64_t read_stream(const uint8_t* p, size_t bytes, quant::Isa isa) {
  if (isa != quant::Isa::Scalar) return read_stream_avx2(p, bytes);
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

}  // namespace ds4::kernels
