// The x86-64 kernel set (AVX2+FMA+F16C) and its run-time CPU check. This file is compiled
// without ISA flags: it only takes the kernels' addresses and asks cpuid.
#include <cpuid.h>

#include "engine/quant/arch/kernel_set.hpp"
#include "engine/quant/arch/x86/kernels_avx2.hpp"

namespace ds4::quant::detail {
namespace {

// The Fast and the Exact kernel of a format, single-row and multi-row.
constexpr CpuKernels orders(DotFn fast, DotFn exact, DotMultiFn multi_fast, DotMultiFn multi) {
  return {.dot = fast, .dot_exact = exact, .dot_multi = multi, .dot_multi_fast = multi_fast};
}

constexpr KernelRow kAvx2Rows[] = {
    {Type::F32, {.dot = dot_f32_avx2, .dot_exact = dot_f32_avx2_exact, .dot_multi_fast = dot_f32_multi_avx2}},
    {Type::F16, orders(dot_f16_avx2, dot_f16_avx2_exact, dot_f16_multi_avx2, dot_f16_multi_avx2_exact)},
    {Type::BF16, orders(dot_bf16_avx2, dot_bf16_avx2_exact, dot_bf16_multi_avx2, dot_bf16_multi_avx2_exact)},
    {Type::Q8_0, orders(dot_q8_0_fast_avx2, dot_q8_0_avx2, dot_q8_0_multi_fast_avx2, dot_q8_0_multi_avx2)},
    {Type::Q2_K, orders(dot_q2_k_fast_avx2, dot_q2_k_avx2, dot_q2_k_multi_fast_avx2, dot_q2_k_multi_avx2)},
    {Type::Q4_K, orders(dot_q4_k_fast_avx2, dot_q4_k_avx2, dot_q4_k_multi_fast_avx2, dot_q4_k_multi_avx2)},
    {Type::IQ2_XXS,
     orders(dot_iq2_xxs_fast_avx2, dot_iq2_xxs_avx2, dot_iq2_xxs_multi_fast_avx2, dot_iq2_xxs_multi_avx2)},
    {Type::MXFP4, orders(dot_mxfp4_fast_avx2, dot_mxfp4_avx2, dot_mxfp4_multi_fast_avx2, dot_mxfp4_multi_avx2)},
};

constexpr KernelSet kSets[] = {{Arch::Avx2, Arch::Generic, kAvx2Rows}};

}  // namespace

std::span<const KernelSet> arch_kernel_sets() { return kSets; }

// cpuid itself rather than __builtin_cpu_supports: clang 14 (the fuzz builds, clang-tidy) has no
// "f16c" feature string. AVX2 also needs the OS to save the YMM registers (XCR0 bits 1-2).
bool arch_cpu_supports(Arch arch) {
  if (arch != Arch::Avx2) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned need1 = bit_FMA | bit_F16C | bit_AVX | bit_OSXSAVE;
  if ((c & need1) != need1) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6u) != 0x6u) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & bit_AVX2) != 0;
}

}  // namespace ds4::quant::detail
