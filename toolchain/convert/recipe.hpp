#pragma once
// Conversion recipes: which GGUF element type each tensor family gets. A recipe is a table of
// slots (families of tensors that share a precision decision) plus per-tensor overrides, from a
// base ("q2", "q4", "mxfp4") or a TOML file. check_recipe() applies the engine's own type table to
// every tensor before anything is written and reports each problem, one line per tensor. The
// slots, the TOML form and the checks: docs/toolchain.md §recipe-slots.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/quant/quant_type.hpp"

namespace ds4::convert {

enum class Slot {
  RoutedGateUp,
  RoutedDown,
  Attention,
  SharedExpert,
  OutputHead,
  Embedding,
  HyperConnection,
  Router,
  CompressorIndexer,
  Scalars,
  Ids,
};
std::string_view slot_name(Slot s);
Slot slot_of(const gguf::TensorRule& rule);

struct Recipe {
  std::string name;  // "q2", "q4", "mxfp4" or the TOML path
  std::map<Slot, quant::Type> slots;
  std::map<std::string, quant::Type> tensor_overrides;

  quant::Type type_for(const gguf::TensorRule& rule) const;
  // One line per slot and override, stable: part of the artifact id.
  std::string canonical() const;
};

std::vector<std::string> builtin_recipe_names();
// "q2", "q4", "mxfp4", or a path to a .toml file. Throws ConvertError naming the file and key for
// a malformed recipe or an unknown type/slot name.
Recipe load_recipe(const std::string& name_or_path);
// Type by GGML name ("q8_0", "q2_K", "iq2_xxs", ...; case-insensitive); throws for an unknown one.
quant::Type parse_type_name(std::string_view name);

// Every violation of the engine's type constraints, one message per tensor (empty: loadable).
std::vector<std::string> check_recipe(const Recipe& r, const std::vector<gguf::TensorRule>& catalogue);

}  // namespace ds4::convert
