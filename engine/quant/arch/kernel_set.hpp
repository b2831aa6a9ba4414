#pragma once
// Internal: how an architecture folder hands its kernels to the dispatcher (dispatch.cpp).
// A kernel set lists, per type, only the kernels the architecture implements (null elsewhere);
// the dispatcher fills every null from the set named by `fallback`, down to the generic set,
// which is complete. Exactly one architecture folder is compiled into a build (CMake picks it
// from the target processor); it defines arch_kernel_sets() and arch_cpu_supports().
#include <span>

#include "engine/quant/quant.hpp"

namespace ds4::quant::detail {

struct KernelRow {
  Type type;
  CpuKernels kernels;
};

struct KernelSet {
  Arch arch;
  Arch fallback;  // where missing kernels come from (Generic for a first-level set)
  std::span<const KernelRow> rows;
};

// The complete reference set (arch/generic/kernels_generic.cpp).
const KernelSet& generic_kernel_set();
// The target architecture's sets (x86: Avx2; arm: Neon, NeonDotprod; other targets: none).
std::span<const KernelSet> arch_kernel_sets();
// Whether the CPU running this process can execute `arch`'s kernels (not asked for Generic).
bool arch_cpu_supports(Arch arch);

}  // namespace ds4::quant::detail
