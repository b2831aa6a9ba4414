#pragma once
// Conversion recipes: which GGUF element type each tensor family gets. A recipe is a table of
// slots (families of tensors that share a precision decision) plus per-tensor overrides:
//
//   slot               tensors                                          q2       q4     mxfp4
//   routed_gate_up     ffn_gate_exps, ffn_up_exps                       iq2_xxs  q4_K   mxfp4
//   routed_down        ffn_down_exps                                    q2_K     q4_K   mxfp4
//   attention          attn_q_a/q_b/kv/output_a/output_b                q8_0
//   shared_expert      ffn_{gate,up,down}_shexp                         q8_0
//   output_head        output                                           q8_0
//   embedding          token_embd                                       f16
//   hyper_connection   hc_*_fn, output_hc_fn                            f16
//   router             ffn_gate_inp                                     f16
//   compressor_indexer attn_compressor_*, indexer*, (2-D ones)          f16
//   scalars            every 1-D tensor: norms, HC scale/base, sinks,   f32
//                      exp_probs_b
// (ffn_gate_tid2eid is always i32: it holds expert ids, not weights.)
//
// A TOML recipe names a base and changes slots or single tensors:
//   base = "q2"
//   [slots]
//   routed_down = "q4_K"
//   [tensors]
//   "blk.3.ffn_down_exps.weight" = "q2_K"
//
// check_recipe() applies the engine's own type table (ds4_layout's catalogue, which the model
// loader agrees with) to every tensor of the model before anything is written: a type the
// engine cannot load, a row length that is not a multiple of the type's block, or gate/up
// experts of different types are all reported, one line per tensor.
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
