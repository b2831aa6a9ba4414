// Memory-read probe, AArch64 NEON: XOR-fold a buffer with eight independent 128-bit load streams,
// enough to keep the load units busy.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

namespace ds4::kernels::detail::neon {

uint64_t read_stream(const uint8_t* p, size_t bytes) {
  uint8x16_t a[8];
  for (uint8x16_t& v : a) v = vdupq_n_u8(0);
  for (size_t i = 0; i + 128 <= bytes; i += 128)
    for (int k = 0; k < 8; k++) a[k] = veorq_u8(a[k], vld1q_u8(p + i + 16 * k));
  uint8x16_t s = a[0];
  for (int k = 1; k < 8; k++) s = veorq_u8(s, a[k]);
  const uint64x2_t w = vreinterpretq_u64_u8(s);
  return vgetq_lane_u64(w, 0) ^ vgetq_lane_u64(w, 1);
}

}  // namespace ds4::kernels::detail::neon
