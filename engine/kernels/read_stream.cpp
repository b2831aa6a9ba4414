// Memory-read probe dispatch (see read_stream.hpp): the architecture's probe where it has one.
#include "engine/kernels/read_stream.hpp"

#include "engine/kernels/arch/kernel_ops.hpp"

namespace ds4::kernels {

uint64_t read_stream(const uint8_t* p, size_t bytes, quant::Isa isa) {
  if (quant::arch_supported(isa.arch))
    if (const detail::ReadStreamFn f = detail::arch_read_stream(isa.arch)) return f(p, bytes);
  return detail::read_stream_generic(p, bytes);
}

}  // namespace ds4::kernels
