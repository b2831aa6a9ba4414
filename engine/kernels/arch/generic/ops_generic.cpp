// Targets other than x86-64 and AArch64: the generic kernels only.
#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels::detail {

const OrderedOps* arch_ordered_ops(quant::Arch) { return nullptr; }
ReadStreamFn arch_read_stream(quant::Arch) { return nullptr; }

}  // namespace ds4::kernels::detail
