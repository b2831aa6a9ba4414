// Memory-read probe, AVX2 (compiled with -mavx2): XOR-fold a buffer with four independent streams of 256-bit loads
// (AVX2), enough to keep the load units busy.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ds4::kernels::detail::avx2 {

uint64_t read_stream(const uint8_t* p, size_t bytes) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i + 128 <= bytes; i += 128) {
    a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_xor_si256(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    c = _mm256_xor_si256(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    d = _mm256_xor_si256(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i s = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  alignas(32) uint64_t l[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), s);
  return l[0] ^ l[1] ^ l[2] ^ l[3];
}

}  // namespace ds4::kernels::detail::avx2
