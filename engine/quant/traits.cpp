// The traits table: one entry per tensor type, pointing at the per-format functions, plus the
// run-time ISA choice and the small conversions every format shares (half rounding,
// round-half-even). Dispatch is a table lookup; the kernels themselves live one family per file.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace detail {

uint16_t f32_to_f16(float f) {
  const uint32_t bits = f32_to_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65536: inf
  const int32_t exp = static_cast<int32_t>(abs >> 23) - 127 + 15;
  uint32_t mant = abs & 0x7fffffu;
  if (exp <= 0) {  // half subnormal or zero
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) half++;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = static_cast<uint32_t>(exp) << 10 | mant >> 13;
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}

int nearest_int(float x) { return static_cast<int>(std::lrintf(x)); }

}  // namespace detail

namespace {
using namespace detail;

// Integer-dot formats use the same kernel for Avx2 and Avx2Exact (it is bit-identical to scalar).
constexpr Traits kTable[] = {
    {.type = Type::F32,
     .block_elems = 1,
     .block_bytes = 4,
     .vec_dot_type = Type::F32,
     .dequantize = dequantize_f32,
     .quantize = quantize_f32,
     .dot_scalar = dot_f32_scalar,
     .dot_avx2 = dot_f32_avx2,
     .dot_avx2_exact = dot_f32_avx2_exact,
     .act_block_bytes = 4,
     .quantize_activation = quantize_act_f32},
    {.type = Type::F16,
     .block_elems = 1,
     .block_bytes = 2,
     .vec_dot_type = Type::F32,
     .dequantize = dequantize_f16,
     .quantize = quantize_f16,
     .dot_scalar = dot_f16_scalar,
     .dot_avx2 = dot_f16_avx2,
     .dot_avx2_exact = dot_f16_avx2_exact},
    {.type = Type::BF16,
     .block_elems = 1,
     .block_bytes = 2,
     .vec_dot_type = Type::F32,
     .dequantize = dequantize_bf16,
     .quantize = quantize_bf16,
     .dot_scalar = dot_bf16_scalar,
     .dot_avx2 = dot_bf16_avx2,
     .dot_avx2_exact = dot_bf16_avx2_exact},
    {.type = Type::Q8_0,
     .block_elems = 32,
     .block_bytes = 34,
     .vec_dot_type = Type::Q8_0,
     .dequantize = dequantize_q8_0,
     .quantize = quantize_q8_0,
     .dot_scalar = dot_q8_0_scalar,
     .dot_avx2 = dot_q8_0_avx2,
     .dot_avx2_exact = dot_q8_0_avx2,
     .dot_multi_avx2 = dot_q8_0_multi_avx2,
     .act_block_bytes = sizeof(BlockQ8_0Act),
     .quantize_activation = quantize_act_q8_0},
    {.type = Type::Q2_K,
     .block_elems = 256,
     .block_bytes = 84,
     .vec_dot_type = Type::Q8_K,
     .dequantize = dequantize_q2_k,
     .quantize = quantize_q2_k,
     .dot_scalar = dot_q2_k_scalar,
     .dot_avx2 = dot_q2_k_avx2,
     .dot_avx2_exact = dot_q2_k_avx2,
     .dot_multi_avx2 = dot_q2_k_multi_avx2},
    {.type = Type::Q4_K,
     .block_elems = 256,
     .block_bytes = 144,
     .vec_dot_type = Type::Q8_K,
     .dequantize = dequantize_q4_k,
     .quantize = quantize_q4_k,
     .dot_scalar = dot_q4_k_scalar,
     .dot_avx2 = dot_q4_k_avx2,
     .dot_avx2_exact = dot_q4_k_avx2,
     .dot_multi_avx2 = dot_q4_k_multi_avx2},
    {.type = Type::IQ2_XXS,
     .block_elems = 256,
     .block_bytes = 66,
     .vec_dot_type = Type::Q8_K,
     .dequantize = dequantize_iq2_xxs,
     .quantize = quantize_iq2_xxs,
     .dot_scalar = dot_iq2_xxs_scalar,
     .dot_avx2 = dot_iq2_xxs_avx2,
     .dot_avx2_exact = dot_iq2_xxs_avx2,
     .dot_multi_avx2 = dot_iq2_xxs_multi_avx2},
    {.type = Type::MXFP4,
     .block_elems = 32,
     .block_bytes = 17,
     .vec_dot_type = Type::Q8_0,
     .dequantize = dequantize_mxfp4,
     .quantize = quantize_mxfp4,
     .dot_scalar = dot_mxfp4_scalar,
     .dot_avx2 = dot_mxfp4_avx2,
     .dot_avx2_exact = dot_mxfp4_avx2,
     .dot_multi_avx2 = dot_mxfp4_multi_avx2},
    // Q8_K is only an activation format: no weight dot.
    {.type = Type::Q8_K,
     .block_elems = 256,
     .block_bytes = 292,
     .vec_dot_type = Type::Q8_K,
     .dequantize = dequantize_q8_k,
     .quantize = quantize_act_q8_k,
     .act_block_bytes = sizeof(BlockQ8_K),
     .quantize_activation = quantize_act_q8_k},
    {.type = Type::I32, .block_elems = 1, .block_bytes = 4, .vec_dot_type = Type::I32},  // tid2eid tables: plain ints
};

Isa detect_isa() {
  if (const char* env = std::getenv("DS4D_ISA"); env && std::strcmp(env, "scalar") == 0) return Isa::Scalar;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return Isa::Avx2;
  return Isa::Scalar;
}

}  // namespace

Isa best_isa() {
  static const Isa isa = detect_isa();
  return isa;
}

Isa exact_isa() { return best_isa() == Isa::Avx2 ? Isa::Avx2Exact : Isa::Scalar; }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return "avx2";
    case Isa::Avx2Exact: return "avx2-exact";
    default: return "scalar";
  }
}

const Traits& traits(Type t) {
  for (const Traits& e : kTable)
    if (e.type == t) return e;
  throw std::invalid_argument("no quant traits for tensor type id " + std::to_string(static_cast<uint32_t>(t)));
}

size_t act_row_bytes(Type vec_dot_type, int64_t n) {
  const Traits& t = traits(vec_dot_type);
  if (t.quantize_activation == nullptr)
    throw std::invalid_argument(std::string(type_info(vec_dot_type).name) + " is not an activation type");
  if (n % t.block_elems != 0)
    throw std::invalid_argument("activation row of " + std::to_string(n) + " elements is not a multiple of the " +
                                std::string(type_info(vec_dot_type).name) + " block size");
  return static_cast<size_t>(n / t.block_elems) * t.act_block_bytes;
}

void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n) {
  act_row_bytes(vec_dot_type, n);  // validates type and length
  traits(vec_dot_type).quantize_activation(x, out, n);
}

DotFn dot_fn(const Traits& t, Isa isa) {
  if (isa == Isa::Avx2 && t.dot_avx2 != nullptr) return t.dot_avx2;
  if (isa == Isa::Avx2Exact && t.dot_avx2_exact != nullptr) return t.dot_avx2_exact;
  return t.dot_scalar;
}

float dot(Type w_type, const void* w, const void* act, int64_t n, Isa isa) {
  const Traits& t = traits(w_type);
  if (t.dot_scalar == nullptr)
    throw std::invalid_argument(std::string(type_info(w_type).name) + " has no weight dot product");
  if (n % t.block_elems != 0)
    throw std::invalid_argument("dot of " + std::to_string(n) + " elements: not a multiple of the " +
                                std::string(type_info(w_type).name) + " block size");
  return dot_fn(t, isa)(w, act, n);
}

}  // namespace ds4::quant
