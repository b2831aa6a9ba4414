#pragma once
// The per-format arithmetic of every tensor type the engine reads: a traits table in the
// style of GGML's type_traits, one entry per Type. Each entry knows how to dequantize a row,
// quantize a row (weights; for Q8_K the activation quantizer), and take the dot product of a
// quantized weight row with an activation row quantized to the entry's vec_dot_type.
//
// Exact vs fast. dot_scalar follows antirez/ds4's CPU operation order (ds4.c, x86 path), so an
// engine built on it reproduces ds4 bit for bit ("exact mode"). For the integer-dot formats
// (Q8_0, Q2_K, Q4_K, IQ2_XXS, MXFP4) dot_avx2 is bit-identical to dot_scalar: SIMD computes
// the exact integer block sums and the float accumulation is done in the same scalar order.
// For F32/F16/BF16 dot_avx2 reorders the float sum (fast mode) and dot_avx2_exact keeps the
// scalar order (SIMD products, serial sum). Pick with best_isa() (fast) or exact_isa().
//
// Activation layouts (what `act` points to in dot(); produce them with quantize_activation):
//   vec_dot_type Q8_0: blocks of 32 as { f32 d; i8 q[32] } (36 bytes). NOTE: unlike GGML's
//     block_q8_0 (f16 d, 34 bytes) the scale stays f32, because ds4 keeps the activation
//     scale in f32 (ds4.c quantize_q8_0_activation); act_row_bytes() gives the size.
//   vec_dot_type Q8_K: GGML's block_q8_K { f32 d; i8 q[256]; i16 bsums[16] } (292 bytes).
//   vec_dot_type F32:  plain f32 (used for F32, F16 and BF16 weights).
// The AVX2 integer kernels assume activation int8 values in [-127, 127] (sign_epi8 cannot negate
// -128); quantize_activation never produces -128.
#include <cstddef>
#include <cstdint>

#include "engine/quant/quant_type.hpp"

namespace ds4::quant {

// Scalar: the portable reference kernels, in ds4's operation order (exact mode).
// Avx2: the fastest kernels (integer formats bit-identical to Scalar; F32/F16/BF16 reordered).
// Avx2Exact: AVX2 kernels that are all bit-identical to Scalar (float formats compute the
//   products with SIMD and keep the scalar's serial sum) -- exact mode on an AVX2 machine.
enum class Isa { Scalar, Avx2, Avx2Exact };

// Avx2 when the CPU has AVX2+FMA+F16C and env DS4D_ISA is not "scalar"; otherwise Scalar.
Isa best_isa();
// The fastest bit-exact choice: Avx2Exact where best_isa() is Avx2, else Scalar.
Isa exact_isa();
const char* isa_name(Isa isa);

// Kernel signatures. n is the element count and must be a multiple of block_elems (the raw
// function pointers do not check; dot(), quantize_activation() and matmul do).
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);
using DotFn = float (*)(const void* w, const void* act, int64_t n);
// One weight row against n_act activation rows (act + t*act_stride): out[t] is bit-identical to
// the single-row kernel of the same ISA; the weight row is decoded once for all of them.
using DotMultiFn = void (*)(const void* w, const void* act, size_t act_stride, int n_act, int64_t n, float* out);

struct Traits {
  Type type;
  uint32_t block_elems, block_bytes;      // weight-format geometry (same as quant_type.hpp)
  Type vec_dot_type;                      // what the activation is quantized to for dot()
  DequantizeFn dequantize = nullptr;      // null for I32
  QuantizeFn quantize = nullptr;          // weight quantizer (Q8_K: the activation quantizer); null for I32
  DotFn dot_scalar = nullptr;             // exact mode; null for Q8_K and I32 (no weight dot)
  DotFn dot_avx2 = nullptr;               // null if none (then dot() uses dot_scalar)
  DotFn dot_avx2_exact = nullptr;         // bit-identical to dot_scalar; null if none
  DotMultiFn dot_multi_avx2 = nullptr;    // several activation rows at once (== dot_avx2 each); null if none
  // Activation side: only meaningful on entries that are someone's vec_dot_type (F32, Q8_0,
  // Q8_K). act_block_bytes is the activation layout's block size (see above), 0 elsewhere.
  uint32_t act_block_bytes = 0;
  QuantizeFn quantize_activation = nullptr;  // §5.2 activation quantizer; null where not a vec_dot_type
};

// Throws std::invalid_argument for a type without an entry.
const Traits& traits(Type t);

// Bytes of an activation row of n elements in the layout of vec_dot_type (F32, Q8_0, Q8_K).
size_t act_row_bytes(Type vec_dot_type, int64_t n);

// Quantize n floats (n a multiple of the block size) into the activation layout of
// vec_dot_type, exactly as ds4 does (§5.2): Q8_0 `d = amax/127, q = lrintf(x*(1/d))`,
// Q8_K `iscale = -127/max (signed max), q = lrintf(iscale*x), d = 1/iscale, bsums`.
void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n);

// Dot product of one weight row of type `w_type` (n elements) with an activation row already in
// traits(w_type).vec_dot_type layout. An AVX2 Isa falls back to scalar where no such kernel exists.
float dot(Type w_type, const void* w, const void* act, int64_t n, Isa isa);

// The kernel dot() would call (for loops that dispatch once); t.dot_scalar if t has no dot.
DotFn dot_fn(const Traits& t, Isa isa);

}  // namespace ds4::quant
