// Recipes: built-in tables, TOML loading and the engine-constraint check; see recipe.hpp.
#include "toolchain/convert/recipe.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert {

using quant::Type;

namespace {

constexpr Slot kSlots[] = {Slot::RoutedGateUp,    Slot::RoutedDown, Slot::Attention,
                           Slot::SharedExpert,    Slot::OutputHead, Slot::Embedding,
                           Slot::HyperConnection, Slot::Router,     Slot::CompressorIndexer,
                           Slot::Scalars,         Slot::Ids};

bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

std::map<Slot, Type> base_slots() {
  return {{Slot::Attention, Type::Q8_0},        {Slot::SharedExpert, Type::Q8_0},   {Slot::OutputHead, Type::Q8_0},
          {Slot::Embedding, Type::F16},         {Slot::HyperConnection, Type::F16}, {Slot::Router, Type::F16},
          {Slot::CompressorIndexer, Type::F16}, {Slot::Scalars, Type::F32},         {Slot::Ids, Type::I32}};
}

Recipe builtin(std::string_view name) {
  Recipe r;
  r.name = std::string(name);
  r.slots = base_slots();
  if (name == "q2") r.slots[Slot::RoutedGateUp] = Type::IQ2_XXS, r.slots[Slot::RoutedDown] = Type::Q2_K;
  else if (name == "q4") r.slots[Slot::RoutedGateUp] = Type::Q4_K, r.slots[Slot::RoutedDown] = Type::Q4_K;
  else if (name == "mxfp4") r.slots[Slot::RoutedGateUp] = Type::MXFP4, r.slots[Slot::RoutedDown] = Type::MXFP4;
  else
    throw ConvertError("", "", "unknown recipe '" + std::string(name) + "' (built-in: q2, q4, mxfp4, or a .toml file)");
  return r;
}

Slot parse_slot(std::string_view s, const std::string& file) {
  for (Slot x : kSlots)
    if (slot_name(x) == s) return x;
  std::string known;
  for (Slot x : kSlots) known += (known.empty() ? "" : ", ") + std::string(slot_name(x));
  throw ConvertError(file, "", "unknown recipe slot '" + std::string(s) + "' (known: " + known + ")");
}

}  // namespace

std::string_view slot_name(Slot s) {
  switch (s) {
    case Slot::RoutedGateUp: return "routed_gate_up";
    case Slot::RoutedDown: return "routed_down";
    case Slot::Attention: return "attention";
    case Slot::SharedExpert: return "shared_expert";
    case Slot::OutputHead: return "output_head";
    case Slot::Embedding: return "embedding";
    case Slot::HyperConnection: return "hyper_connection";
    case Slot::Router: return "router";
    case Slot::CompressorIndexer: return "compressor_indexer";
    case Slot::Scalars: return "scalars";
    case Slot::Ids: return "ids";
  }
  return "?";
}

Slot slot_of(const gguf::TensorRule& rule) {
  using gguf::Family;
  if (ends_with(rule.name, "ffn_gate_tid2eid.weight")) return Slot::Ids;
  if (rule.dims.size() == 1) return Slot::Scalars;
  switch (rule.family) {
    case Family::RoutedExperts:
      return ends_with(rule.name, "ffn_down_exps.weight") ? Slot::RoutedDown : Slot::RoutedGateUp;
    case Family::Attention: return Slot::Attention;
    case Family::SharedExpert: return Slot::SharedExpert;
    case Family::Embedding: return Slot::Embedding;
    case Family::OutputHead: return Slot::OutputHead;
    case Family::Router: return Slot::Router;
    case Family::HyperConnection: return Slot::HyperConnection;
    case Family::CompressorIndexer: return Slot::CompressorIndexer;
    case Family::Norms: return Slot::Scalars;
  }
  return Slot::Scalars;
}

Type Recipe::type_for(const gguf::TensorRule& rule) const {
  if (auto it = tensor_overrides.find(rule.name); it != tensor_overrides.end()) return it->second;
  if (auto it = slots.find(slot_of(rule)); it != slots.end()) return it->second;
  return rule.allowed.front();
}

std::string Recipe::canonical() const {
  std::string s;
  for (const auto& [slot, t] : slots)
    s += std::string(slot_name(slot)) + "=" + std::string(quant::type_info(t).name) + "\n";
  for (const auto& [n, t] : tensor_overrides) s += n + "=" + std::string(quant::type_info(t).name) + "\n";
  return s;
}

std::vector<std::string> builtin_recipe_names() { return {"q2", "q4", "mxfp4"}; }

Type parse_type_name(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string o(s);
    for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  for (Type t :
       {Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::MXFP4, Type::I32})
    if (lower(quant::type_info(t).name) == lower(name)) return t;
  throw ConvertError(
      "", "",
      "unknown tensor type '" + std::string(name) + "' (known: f32, f16, bf16, q8_0, q2_K, q4_K, iq2_xxs, mxfp4, i32)");
}

Recipe load_recipe(const std::string& name_or_path) {
  if (!ends_with(name_or_path, ".toml")) return builtin(name_or_path);
  const std::string& file = name_or_path;
  toml::table tbl;
  try {
    tbl = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw ConvertError(file, "", std::string("not a valid TOML recipe: ") + std::string(e.description()));
  }
  Recipe r = builtin(tbl["base"].value_or(std::string("q2")));
  r.name = file;
  auto type_of = [&](const toml::node& v, const std::string& key) {
    const auto s = v.value<std::string>();
    if (!s) throw ConvertError(file, "", "key '" + key + "' must be a type name string");
    try {
      return parse_type_name(*s);
    } catch (const ConvertError& e) {
      throw ConvertError(file, "", "key '" + key + "': " + e.what());
    }
  };
  for (const auto& [k, v] : tbl) {
    const std::string key(k.str());
    if (key != "base" && key != "slots" && key != "tensors")
      throw ConvertError(file, "", "unknown top-level key '" + key + "' (known: base, slots, tensors)");
  }
  if (const toml::table* slots = tbl["slots"].as_table())
    for (const auto& [k, v] : *slots) r.slots[parse_slot(k.str(), file)] = type_of(v, "slots." + std::string(k.str()));
  if (const toml::table* ts = tbl["tensors"].as_table())
    for (const auto& [k, v] : *ts)
      r.tensor_overrides[std::string(k.str())] = type_of(v, "tensors." + std::string(k.str()));
  return r;
}

std::vector<std::string> check_recipe(const Recipe& r, const std::vector<gguf::TensorRule>& catalogue) {
  std::vector<std::string> bad;
  std::map<std::string, bool> known;
  for (const gguf::TensorRule& rule : catalogue) known[rule.name] = true;
  for (const auto& [n, t] : r.tensor_overrides)
    if (!known.count(n)) bad.push_back("recipe override names '" + n + "', which is not a tensor of this model");
  std::map<int, Type> gate_type;
  for (const gguf::TensorRule& rule : catalogue) {
    const Type t = r.type_for(rule);
    std::string allowed;
    for (Type a : rule.allowed) allowed += (allowed.empty() ? "" : "|") + std::string(quant::type_info(a).name);
    if (std::find(rule.allowed.begin(), rule.allowed.end(), t) == rule.allowed.end()) {
      bad.push_back("tensor '" + rule.name + "' would get type " + std::string(quant::type_info(t).name) + " (slot " +
                    std::string(slot_name(slot_of(rule))) + "), but the engine loads it only as " + allowed);
      continue;
    }
    const uint32_t be = quant::type_info(t).block_elems;
    if (rule.dims[0] % be != 0)
      bad.push_back("tensor '" + rule.name + "': rows of " + std::to_string(rule.dims[0]) +
                    " elements are not a multiple of " + std::string(quant::type_info(t).name) + "'s block of " +
                    std::to_string(be));
    if (ends_with(rule.name, "ffn_gate_exps.weight")) gate_type[rule.layer] = t;
    if (ends_with(rule.name, "ffn_up_exps.weight") && gate_type.count(rule.layer) && gate_type[rule.layer] != t)
      bad.push_back("tensor '" + rule.name + "' would get type " + std::string(quant::type_info(t).name) +
                    " but the gate experts of layer " + std::to_string(rule.layer) + " get " +
                    std::string(quant::type_info(gate_type[rule.layer]).name) +
                    " (the engine needs gate and up equal)");
  }
  return bad;
}

}  // namespace ds4::convert
