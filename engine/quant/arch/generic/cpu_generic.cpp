// Targets other than x86-64 and AArch64: no architecture kernel sets, the generic set only.
#include "engine/quant/arch/kernel_set.hpp"

namespace ds4::quant::detail {

std::span<const KernelSet> arch_kernel_sets() { return {}; }
bool arch_cpu_supports(Arch) { return false; }

}  // namespace ds4::quant::detail
