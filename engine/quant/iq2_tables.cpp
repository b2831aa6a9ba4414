// The IQ2_XXS code book: 256 grid points of 8 magnitudes each (bytes 0x08, 0x19, 0x2b = 8, 25,
// 43), the standard GGML iq2xxs_grid data (also ds4.c:283-348), and the sign-pattern table built
// from its definition: entry i (7 bits) plus a parity bit 7 that makes the number of negative
// signs even, so 7 stored bits describe 8 signs.
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

// Element j of grid point g is byte j (little endian) of kIq2xxsGrid[g].
alignas(64) const uint64_t kIq2xxsGrid[256] = {
#include "engine/quant/iq2_grid.inc"
};

namespace {
constexpr Iq2Signs build_signs() {
  Iq2Signs t{};
  for (int i = 0; i < 128; i++) {
    int pop = 0;
    for (int b = 0; b < 7; b++) pop += (i >> b) & 1;
    const uint8_t mask = static_cast<uint8_t>(i | (pop & 1) << 7);
    t.mask[i] = mask;
    uint64_t pm = 0;
    for (int b = 0; b < 8; b++) pm |= static_cast<uint64_t>((mask >> b) & 1 ? 0xff : 0x01) << (8 * b);
    t.plus_minus_one[i] = pm;
  }
  return t;
}
}  // namespace

alignas(64) const Iq2Signs kIq2Signs = build_signs();

}  // namespace ds4::quant::detail
