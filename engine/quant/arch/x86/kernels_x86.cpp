// The x86-64 kernel set (AVX2+FMA+F16C) and its run-time CPU check. This file is compiled
// without ISA flags: it only takes the kernels' addresses and asks cpuid.
#include "engine/quant/arch/kernel_set.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"

namespace ds4::quant::detail {
namespace {

// Integer formats: one kernel for both orders (it is bit-identical to the generic one).
constexpr CpuKernels integer(DotFn f, DotMultiFn m) { return {.dot = f, .dot_exact = f, .dot_multi = m}; }

constexpr KernelRow kAvx2Rows[] = {
    {Type::F32, {.dot = dot_f32_avx2, .dot_exact = dot_f32_avx2_exact}},
    {Type::F16, {.dot = dot_f16_avx2, .dot_exact = dot_f16_avx2_exact}},
    {Type::BF16, {.dot = dot_bf16_avx2, .dot_exact = dot_bf16_avx2_exact}},
    {Type::Q8_0, integer(dot_q8_0_avx2, dot_q8_0_multi_avx2)},
    {Type::Q2_K, integer(dot_q2_k_avx2, dot_q2_k_multi_avx2)},
    {Type::Q4_K, integer(dot_q4_k_avx2, dot_q4_k_multi_avx2)},
    {Type::IQ2_XXS, integer(dot_iq2_xxs_avx2, dot_iq2_xxs_multi_avx2)},
    {Type::MXFP4, integer(dot_mxfp4_avx2, dot_mxfp4_multi_avx2)},
};

constexpr KernelSet kSets[] = {{Arch::Avx2, Arch::Generic, kAvx2Rows}};

}  // namespace

std::span<const KernelSet> arch_kernel_sets() { return kSets; }

bool arch_cpu_supports(Arch arch) {
  if (arch != Arch::Avx2) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

}  // namespace ds4::quant::detail
