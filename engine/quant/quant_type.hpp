#pragma once
// The tensor element types a DS4 Flash GGUF can hold, with their GGUF ids and block geometry.
// This header is the one place that knows sizes; the per-format arithmetic lives in the
// traits table (quant.hpp). Readers that only need sizes (GGUF validation, the capacity
// planner) depend on this header alone.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ds4::quant {

enum class Type : uint32_t {
  F32 = 0,
  F16 = 1,
  Q8_0 = 8,
  Q2_K = 10,
  Q4_K = 12,
  Q8_K = 15,
  IQ2_XXS = 16,
  I32 = 26,
  BF16 = 30,
  MXFP4 = 39,
};

struct TypeInfo {
  Type type;
  std::string_view name;  // GGML's name, e.g. "q2_K"
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
};

// Geometry of a known type; std::nullopt for an id this engine does not know.
std::optional<TypeInfo> type_info(uint32_t ggml_type);
const TypeInfo& type_info(Type t);

// Bytes of a row of n elements; throws std::invalid_argument if n is not a multiple of the
// block size.
uint64_t row_bytes(Type t, uint64_t n);

}  // namespace ds4::quant
