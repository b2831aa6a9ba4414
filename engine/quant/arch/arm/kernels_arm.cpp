// The AArch64 kernel sets and their run-time CPU check (getauxval(AT_HWCAP)). Neon: every
// format in both orders (Fast and Exact, single-row and multi-activation), on plain Advanced SIMD
// (part of the AArch64 base ISA). NeonDotprod: the integer dots of both orders through SDOT;
// everything else falls back to Neon. This file has no ISA flags.
#include "engine/quant/arch/arm/kernels_arm.hpp"

#include <sys/auxv.h>

#include "engine/quant/arch/kernel_set.hpp"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

namespace ds4::quant::detail {
namespace {

// The Fast and the Exact kernel of a format, single-row and multi-row.
constexpr CpuKernels orders(DotFn fast, DotFn exact, DotMultiFn multi_fast, DotMultiFn multi) {
  return {.dot = fast, .dot_exact = exact, .dot_multi = multi, .dot_multi_fast = multi_fast};
}

constexpr KernelRow kNeonRows[] = {
    {Type::F32, {.dot = dot_f32_neon, .dot_exact = dot_f32_neon_exact, .dot_multi_fast = dot_f32_multi_neon}},
    {Type::F16, orders(dot_f16_neon, dot_f16_neon_exact, dot_f16_multi_neon, dot_f16_multi_neon_exact)},
    {Type::BF16, orders(dot_bf16_neon, dot_bf16_neon_exact, dot_bf16_multi_neon, dot_bf16_multi_neon_exact)},
    {Type::Q8_0,
     {.dot = dot_q8_0_fast_neon,
      .dot_exact = dot_q8_0_neon,
      .dot_multi = dot_q8_0_multi_neon,
      .dot_multi_fast = dot_q8_0_multi_fast_neon,
      .quantize_activation = quantize_act_q8_0_neon}},
    {Type::Q2_K, orders(dot_q2_k_fast_neon, dot_q2_k_neon, dot_q2_k_multi_fast_neon, dot_q2_k_multi_neon)},
    {Type::Q4_K, orders(dot_q4_k_fast_neon, dot_q4_k_neon, dot_q4_k_multi_fast_neon, dot_q4_k_multi_neon)},
    {Type::IQ2_XXS,
     orders(dot_iq2_xxs_fast_neon, dot_iq2_xxs_neon, dot_iq2_xxs_multi_fast_neon, dot_iq2_xxs_multi_neon)},
    {Type::MXFP4, orders(dot_mxfp4_fast_neon, dot_mxfp4_neon, dot_mxfp4_multi_fast_neon, dot_mxfp4_multi_neon)},
    {Type::Q8_K, {.quantize_activation = quantize_act_q8_k_neon}},
};

constexpr KernelRow kDotprodRows[] = {
    {Type::Q8_0, orders(dot_q8_0_fast_dotprod, dot_q8_0_dotprod, dot_q8_0_multi_fast_dotprod, dot_q8_0_multi_dotprod)},
    {Type::Q2_K, orders(dot_q2_k_fast_dotprod, dot_q2_k_dotprod, dot_q2_k_multi_fast_dotprod, dot_q2_k_multi_dotprod)},
    {Type::Q4_K, orders(dot_q4_k_fast_dotprod, dot_q4_k_dotprod, dot_q4_k_multi_fast_dotprod, dot_q4_k_multi_dotprod)},
    {Type::IQ2_XXS,
     orders(dot_iq2_xxs_fast_dotprod, dot_iq2_xxs_dotprod, dot_iq2_xxs_multi_fast_dotprod, dot_iq2_xxs_multi_dotprod)},
    {Type::MXFP4,
     orders(dot_mxfp4_fast_dotprod, dot_mxfp4_dotprod, dot_mxfp4_multi_fast_dotprod, dot_mxfp4_multi_dotprod)},
};

// Parents first: the dispatcher resolves a set's fallback before the set.
constexpr KernelSet kSets[] = {
    {Arch::Neon, Arch::Generic, kNeonRows},
    {Arch::NeonDotprod, Arch::Neon, kDotprodRows},
};

}  // namespace

std::span<const KernelSet> arch_kernel_sets() { return kSets; }

bool arch_cpu_supports(Arch arch) {
  const unsigned long hw = getauxval(AT_HWCAP);
  const bool asimd = (hw & HWCAP_ASIMD) != 0;
  if (arch == Arch::Neon) return asimd;
  if (arch == Arch::NeonDotprod) return asimd && (hw & HWCAP_ASIMDDP) != 0;
  return false;
}

}  // namespace ds4::quant::detail
