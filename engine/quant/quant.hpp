#pragma once
// The per-format arithmetic of every tensor type the engine reads, split the way GGML splits
// it: format traits (Traits: geometry, to_float, from_float, activation format), one entry per
// Type in a table indexed by type, and CPU kernels (CpuKernels: dot products, multi-row dots,
// activation quantizers) per architecture, chosen at run time by CPU features. Pick with
// best_isa() (fast) or exact_isa(); the integer-dot SIMD kernels are bit-identical to the generic
// ones. Produce what `act` points to in dot() with quantize_activation (act_row_bytes() gives its
// size). Exact vs fast, the activation layouts and the int8 range the AVX2 kernels assume:
// docs/quant.md §block-layouts, §activation-quantization, §exact-order-of-the-integer-dots.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/quant/quant_type.hpp"

namespace ds4::quant {

// Which CPU kernels run: an architecture's kernel set (arch/<folder>/, one file per family) and
// an accumulation order. A kernel set lists only what it implements; every missing kernel
// falls back to the set named by its fallback (NeonDotprod -> Neon -> Generic, Avx2 -> Generic),
// so a new ISA is a new folder plus one row in its arch's kernel list, never a new column here.
//   Generic: the portable scalar reference kernels (arch/generic/) of both orders.
//   Avx2: x86-64 AVX2+FMA+F16C (arch/x86/). Neon: AArch64 Advanced SIMD (arch/arm/);
//   NeonDotprod: Neon plus the SDOT instructions (ARMv8.2 dotprod; arch/arm/).
// Order::Exact is ds4's serial order (the generic dots_generic.cpp); Order::Fast is the
// documented sliced order of docs/arithmetic.md §quantized-dot and §float-dot (the generic
// dots_fast_generic.cpp). Within one order every architecture returns the same bits, so a
// kernel an architecture lacks can always come from its fallback.
enum class Arch : uint8_t { Generic, Avx2, Neon, NeonDotprod };
inline constexpr int kArchCount = 4;
enum class Order : uint8_t { Fast, Exact };

struct Isa {
  Arch arch = Arch::Generic;
  Order order = Order::Exact;
  friend constexpr bool operator==(Isa, Isa) = default;
  static const Isa Scalar;  // generic kernels, reference order
};
inline constexpr Isa Isa::Scalar{Arch::Generic, Order::Exact};

// The fastest supported architecture in Order::Fast. DS4D_ISA overrides the choice: "scalar"
// (or "generic") forces the generic kernels (the switch tests and bisecting use); "avx2",
// "neon", "dotprod" name an architecture, which must be supported (std::runtime_error if not).
// Decided once per process.
Isa best_isa();
// best_isa() in Order::Exact: the fastest choice that gives the generic kernels' bits.
Isa exact_isa();
// "scalar", "avx2", "avx2-exact", "neon", "neon-exact", "neon-dotprod", "neon-dotprod-exact".
const char* isa_name(Isa isa);
const char* arch_name(Arch arch);
// True when this build has the architecture's kernels and the CPU can run them (cpuid on x86,
// getauxval(AT_HWCAP) on arm64). Always true for Generic.
bool arch_supported(Arch arch);
// Every Isa this machine can run: Isa::Scalar, then each supported architecture in both orders.
std::vector<Isa> supported_isas();

// Kernel signatures. n is the element count and must be a multiple of block_elems (the raw
// function pointers do not check; dot(), quantize_activation() and matmul do).
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);
// Importance-weighted weight quantizer: importance[n] >= 0, one per element of the row (for a
// matrix row, the imatrix's per-input-column activation energy); minimises Σ w_i (x_i - q_i)²
// with w_i derived from it (docs/quant.md §importance-weighted-quantization).
using QuantizeWeightedFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);
using DotFn = float (*)(const void* w, const void* act, int64_t n);
// One weight row against n_act activation rows (act + t*act_stride): out[t] is bit-identical to
// the single-row kernel of the same order; the weight row is decoded once for all of them.
using DotMultiFn = void (*)(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);

// Format traits: what a type is, independent of any CPU. Indexed by Type.
struct Traits {
  Type type;
  uint32_t block_elems, block_bytes;  // weight-format geometry (block_bytes = sizeof the block)
  Type vec_dot_type;                  // what the activation is quantized to for dot()
  DequantizeFn dequantize = nullptr;  // to_float; null for I32
  QuantizeFn quantize = nullptr;      // from_float: weight quantizer (Q8_K: the activation quantizer); null for I32
  // The weighted weight quantizer: only where importance can steer a choice (Q2_K, Q4_K,
  // IQ2_XXS). Null for the float types and MXFP4 (nothing to choose), and for Q8_0, whose one
  // choice, the block scale amax/127, leaves an error importance cannot usefully move (GGML's
  // Q8_0 ignores its imatrix too).
  QuantizeWeightedFn quantize_weighted = nullptr;
  bool has_dot = false;  // a weight format with a dot product (all but Q8_K, I32)
  // Activation side: only meaningful on entries that are someone's vec_dot_type (F32, Q8_0,
  // Q8_K). act_block_bytes is the activation layout's block size (see above), 0 elsewhere.
  uint32_t act_block_bytes = 0;
  QuantizeFn quantize_activation = nullptr;  // docs/quant.md §activation-quantization; null where not a vec_dot_type
};

// CPU kernels of one type on one architecture, with every kernel the architecture lacks taken
// from its fallback. Null where the type has none (no dot for Q8_K/I32; the multi-row kernels
// only where some architecture implements them; quantize_activation only on activation types).
struct CpuKernels {
  DotFn dot = nullptr;                       // Order::Fast: bit-identical to the generic Fast dot
  DotFn dot_exact = nullptr;                 // Order::Exact: bit-identical to the generic dot
  DotMultiFn dot_multi = nullptr;            // several activation rows, each == dot_exact
  DotMultiFn dot_multi_fast = nullptr;       // several activation rows, each == dot
  QuantizeFn quantize_activation = nullptr;  // bit-identical to Traits::quantize_activation
};

// Throws std::invalid_argument for a type without an entry.
const Traits& traits(Type t);
// Throws std::invalid_argument for a type without an entry or an unsupported architecture.
const CpuKernels& cpu_kernels(Type t, Arch arch);

// Quantizes one weight row of n elements into dst (row_bytes(t, n) bytes). With importance
// (n values, >= 0) and a format that has a weighted quantizer, the weighted one; otherwise --
// importance null, all zero, or a format without a weighted mode -- the plain quantizer, byte
// for byte. std::invalid_argument for a type without a quantizer or a bad length.
void quantize_row(Type t, const float* src, void* dst, int64_t n, const float* importance);

// Bytes of an activation row of n elements in the layout of vec_dot_type (F32, Q8_0, Q8_K).
size_t act_row_bytes(Type vec_dot_type, int64_t n);

// Quantize n floats (n a multiple of the block size) into the activation layout of
// vec_dot_type, exactly as ds4 does (docs/quant.md §activation-quantization): Q8_0 `d = amax/127, q = lrintf(x*(1/d))`,
// Q8_K `iscale = -127/max (signed max), q = lrintf(iscale*x), d = 1/iscale, bsums`.
// Runs best_isa()'s kernel (the bytes are the same on every architecture) or isa's.
void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n);
void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n, Isa isa);

// Dot product of one weight row of type `w_type` (n elements) with an activation row already in
// traits(w_type).vec_dot_type layout, with isa's kernel (std::invalid_argument for a type
// without a dot, a bad length, or an architecture this machine cannot run).
float dot(Type w_type, const void* w, const void* act, int64_t n, Isa isa);

// The kernel dot() would call (for loops that dispatch once); null if t has no dot.
DotFn dot_fn(const Traits& t, Isa isa);
// The multi-row kernel of isa's order (bit-identical per output to dot_fn); null where none.
DotMultiFn dot_multi_fn(const Traits& t, Isa isa);

}  // namespace ds4::quant
