#include "engine/quant/quant_type.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace ds4::quant {
namespace {
constexpr std::array<TypeInfo, 10> kTypes{{
    {Type::F32, "f32", 1, 4},
    {Type::F16, "f16", 1, 2},
    {Type::Q8_0, "q8_0", 32, 34},
    {Type::Q2_K, "q2_K", 256, 84},
    {Type::Q4_K, "q4_K", 256, 144},
    {Type::Q8_K, "q8_K", 256, 292},
    {Type::IQ2_XXS, "iq2_xxs", 256, 66},
    {Type::I32, "i32", 1, 4},
    {Type::BF16, "bf16", 1, 2},
    {Type::MXFP4, "mxfp4", 32, 17},
}};
}  // namespace

std::optional<TypeInfo> type_info(uint32_t ggml_type) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == ggml_type) return t;
  return std::nullopt;
}

const TypeInfo& type_info(Type t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  throw std::invalid_argument("unknown tensor type id " + std::to_string(static_cast<uint32_t>(t)));
}

uint64_t row_bytes(Type t, uint64_t n) {
  const TypeInfo& i = type_info(t);
  if (n % i.block_elems != 0)
    throw std::invalid_argument("row of " + std::to_string(n) + " elements is not a multiple of the " +
                                std::string(i.name) + " block size " + std::to_string(i.block_elems));
  return n / i.block_elems * i.block_bytes;
}

}  // namespace ds4::quant
