#pragma once
// Internal: the per-architecture implementations of the order-preserving kernels
// (ordered_simd.hpp) and of the memory-read probe (read_stream.hpp). Exactly one architecture
// folder is compiled (CMake picks it from the target processor, like quant/arch/); it says which
// implementation belongs to a kernel architecture, or null where it has none, and the caller
// then runs the generic one.
// Every implementation here must give the generic one's bits: docs/arithmetic.md §conventions.
#include <cstddef>
#include <cstdint>

#include "engine/quant/quant.hpp"

namespace ds4::kernels::detail {

struct OrderedOps {
  void (*f16_matvec_rows)(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x, float* out);
  // ordered_simd.hpp f16_matvec_rows_multi for 1 <= n_x <= kMultiRows (the dispatcher splits
  // larger batches).
  void (*f16_matvec_rows_multi)(const uint16_t* W, int64_t cols, int64_t r0, int64_t r1, const float* x,
                                size_t x_stride, int n_x, float* out, size_t out_stride);
  void (*dot_lanes)(const float* qT, uint32_t lanes, const float* k, uint32_t d, float* out);
  void (*axpy)(float* y, const float* x, float a, uint32_t n);
};
using ReadStreamFn = uint64_t (*)(const uint8_t* p, size_t bytes);

// arch/generic: the sequential references.
extern const OrderedOps kOrderedGeneric;
uint64_t read_stream_generic(const uint8_t* p, size_t bytes);

// arch/<target>: the implementation for kernel architecture `a` (supported by the CPU), or null.
const OrderedOps* arch_ordered_ops(quant::Arch a);
ReadStreamFn arch_read_stream(quant::Arch a);

}  // namespace ds4::kernels::detail
