// AArch64 integer dots through SDOT (ARMv8.2 dotprod; this file alone is compiled with
// -march=armv8.2-a+dotprod, and its kernels run only where HWCAP_ASIMDDP is set).
#include "engine/quant/arch/arm/int_dots.hpp"
#include "engine/quant/arch/arm/int_dots_multi.hpp"
#include "engine/quant/arch/arm/kernels_arm.hpp"

namespace ds4::quant::detail::arm {
namespace {
struct SdotDot {
  static int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
}  // namespace
}  // namespace ds4::quant::detail::arm

DS4_ARM_DEFINE_INT_DOTS(dotprod, arm::SdotDot)
DS4_ARM_DEFINE_INT_DOTS_MULTI(dotprod, arm::SdotDot)
