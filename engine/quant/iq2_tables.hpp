#pragma once
// Internal: IQ2_XXS grid and sign tables (see iq2_tables.cpp).
#include <cstdint>

namespace ds4::quant::detail {

extern const uint64_t kIq2xxsGrid[256];

struct Iq2Signs {
  uint8_t mask[128];             // ksigns_iq2xs: bit j set = element j negative (even popcount)
  uint64_t plus_minus_one[128];  // the same as 8 int8 lanes of +1 / -1 (for _mm256_sign_epi8)
};
extern const Iq2Signs kIq2Signs;

}  // namespace ds4::quant::detail
