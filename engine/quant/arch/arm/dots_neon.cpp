// AArch64 integer dots with plain Advanced SIMD: int8 products widened to int16 (SMULL) and
// pairwise-accumulated into int32 (SADALP) -- exact for any int8 inputs, ARMv8.0.
#include "engine/quant/arch/arm/int_dots.hpp"
#include "engine/quant/arch/arm/int_dots_multi.hpp"
#include "engine/quant/arch/arm/kernels_arm.hpp"

namespace ds4::quant::detail::arm {
namespace {
struct NeonDot {
  static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
  }
};
}  // namespace
}  // namespace ds4::quant::detail::arm

DS4_ARM_DEFINE_INT_DOTS(neon, arm::NeonDot)
DS4_ARM_DEFINE_INT_DOTS_MULTI(neon, arm::NeonDot)
