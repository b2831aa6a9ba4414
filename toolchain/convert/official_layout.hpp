#pragma once
// Where each GGUF tensor of the DS4 catalogue comes from in the official checkpoint
// (names as in docs/model.md §official-checkpoint-names):
//   global:    token_embd <- embed.weight, output <- head.weight, output_norm <- norm.weight,
//              output_hc_{fn,scale,base} <- hc_head_{fn,scale,base}
//   per layer: blk.N.<gguf> <- layers.N.<hf> (attn.wq_a.weight, attn.compressor.wkv.weight, ...)
//   experts:   blk.N.ffn_{gate,up,down}_exps <- layers.N.ffn.experts.E.w{1,3,2}.weight, E in
//              0..n_expert-1, stacked expert-major
// A ".weight" stored as F8_E4M3 has its E8M0 block scales in the sibling ".scale"; expert weights
// are packed FP4 (I8) with ".scale" per 32 inputs. HF shapes are the GGUF dims reversed.
// MTP / drafter tensors are "mtp.0.*" and go to the sidecar GGUF (not the main file).
//
// config.json carries the dimensions (keys listed in official_config.cpp) and tokenizer.json the
// BPE vocabulary; both map onto the deepseek4.* / tokenizer.ggml.* metadata the engine reads.
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
