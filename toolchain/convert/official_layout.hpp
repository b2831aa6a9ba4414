#pragma once
// Where each GGUF tensor of the DS4 catalogue comes from in the official checkpoint (names as in
// docs/model.md §official-checkpoint-names; experts, scales, shapes and the MTP sidecar in
// docs/toolchain.md §official-layout-and-config). config.json carries the dimensions and
// tokenizer.json the BPE vocabulary; both map onto the deepseek4.* / tokenizer.ggml.* metadata.
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"

namespace ds4::convert {

// HF name of a non-expert catalogue tensor; nullopt for routed-expert tensors.
std::optional<std::string> official_name(const gguf::TensorRule& rule);
// For a routed-expert rule: "layers.N.ffn.experts.{E}.w1" etc. without the expert number, i.e.
// returns {"layers.N.ffn.experts.", ".w1"}; the weight is prefix + E + part + ".weight".
struct ExpertName {
  std::string prefix, part;
  std::string weight(uint32_t e) const { return prefix + std::to_string(e) + part + ".weight"; }
  std::string scale(uint32_t e) const { return prefix + std::to_string(e) + part + ".scale"; }
};
std::optional<ExpertName> official_expert_name(const gguf::TensorRule& rule);
// The sibling scale tensor name of an FP8 ".weight".
std::string scale_name_for(const std::string& weight_name);

}  // namespace ds4::convert
