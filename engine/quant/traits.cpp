// The format traits table: one entry per tensor type, indexed by type, pointing at the
// per-format functions, plus the small conversions every format shares (half rounding,
// round-half-even). The CPU kernels and their run-time choice are in dispatch.cpp.
#include <array>
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

// The table is indexed by the GGML type id (MXFP4 = 39 is the largest); unlisted ids stay
// empty (block_elems 0). Block sizes come from the block structs, so the table cannot disagree
// with the layouts the kernels read.
constexpr size_t kSlots = 40;

template <class Block>
constexpr Traits format(Type t, uint32_t elems, Type vdt, DequantizeFn deq, QuantizeFn q) {
  return {.type = t,
          .block_elems = elems,
          .block_bytes = sizeof(Block),
          .vec_dot_type = vdt,
          .dequantize = deq,
          .quantize = q,
          .has_dot = true};
}

constexpr std::array<Traits, kSlots> make_table() {
  std::array<Traits, kSlots> tab{};
  auto put = [&](const Traits& tr) { tab[static_cast<size_t>(tr.type)] = tr; };
  Traits f32 = format<float>(Type::F32, 1, Type::F32, dequantize_f32, quantize_f32);
  f32.act_block_bytes = sizeof(float);
  f32.quantize_activation = quantize_act_f32;
  put(f32);
  put(format<uint16_t>(Type::F16, 1, Type::F32, dequantize_f16, quantize_f16));
  put(format<uint16_t>(Type::BF16, 1, Type::F32, dequantize_bf16, quantize_bf16));
  Traits q8_0 = format<BlockQ8_0>(Type::Q8_0, 32, Type::Q8_0, dequantize_q8_0, quantize_q8_0);
  q8_0.act_block_bytes = sizeof(BlockQ8_0Act);
  q8_0.quantize_activation = quantize_act_q8_0;
  put(q8_0);
  Traits q2_k = format<BlockQ2_K>(Type::Q2_K, QK_K, Type::Q8_K, dequantize_q2_k, quantize_q2_k);
  q2_k.quantize_weighted = quantize_q2_k_weighted;
  put(q2_k);
  Traits q4_k = format<BlockQ4_K>(Type::Q4_K, QK_K, Type::Q8_K, dequantize_q4_k, quantize_q4_k);
  q4_k.quantize_weighted = quantize_q4_k_weighted;
  put(q4_k);
  Traits iq2 = format<BlockIQ2_XXS>(Type::IQ2_XXS, QK_K, Type::Q8_K, dequantize_iq2_xxs, quantize_iq2_xxs);
  iq2.quantize_weighted = quantize_iq2_xxs_weighted;
  put(iq2);
  put(format<BlockMXFP4>(Type::MXFP4, 32, Type::Q8_0, dequantize_mxfp4, quantize_mxfp4));
  // Q8_K is only an activation format: no weight dot.
  Traits q8_k = format<BlockQ8_K>(Type::Q8_K, QK_K, Type::Q8_K, dequantize_q8_k, quantize_act_q8_k);
  q8_k.has_dot = false;
  q8_k.act_block_bytes = sizeof(BlockQ8_K);
  q8_k.quantize_activation = quantize_act_q8_k;
  put(q8_k);
  put({.type = Type::I32,
       .block_elems = 1,
       .block_bytes = sizeof(int32_t),
       .vec_dot_type = Type::I32});  // tid2eid tables: plain ints
  return tab;
}

constexpr std::array<Traits, kSlots> kTable = make_table();

}  // namespace

const Traits& traits(Type t) {
  const auto id = static_cast<size_t>(t);
  if (id < kSlots && kTable[id].block_elems != 0) return kTable[id];
  throw std::invalid_argument("no quant traits for tensor type id " + std::to_string(static_cast<uint32_t>(t)));
}

void quantize_row(Type t, const float* src, void* dst, int64_t n, const float* importance) {
  const Traits& tr = traits(t);
  if (tr.quantize == nullptr || !tr.has_dot)
    throw std::invalid_argument(std::string(type_info(t).name) + " has no weight quantizer");
  if (n <= 0 || n % tr.block_elems != 0)
    throw std::invalid_argument("row of " + std::to_string(n) + " elements is not a multiple of the " +
                                std::string(type_info(t).name) + " block size");
  bool informative = false;
  if (importance && tr.quantize_weighted)
    for (int64_t i = 0; i < n && !informative; i++) informative = importance[i] > 0;
  if (informative) tr.quantize_weighted(src, dst, n, importance);
  else tr.quantize(src, dst, n);
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

}  // namespace ds4::quant
