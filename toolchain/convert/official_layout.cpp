// GGUF <-> official checkpoint tensor names; see official_layout.hpp.
#include "toolchain/convert/official_layout.hpp"

#include <string_view>

namespace ds4::convert {
namespace {

struct NamePair {
  std::string_view gguf, hf;
};

constexpr NamePair kGlobal[] = {
    {"token_embd.weight", "embed.weight"}, {"output_norm.weight", "norm.weight"},
    {"output.weight", "head.weight"},      {"output_hc_base.weight", "hc_head_base"},
    {"output_hc_fn.weight", "hc_head_fn"}, {"output_hc_scale.weight", "hc_head_scale"},
};

constexpr NamePair kLayer[] = {
    {"hc_attn_base.weight", "hc_attn_base"},
    {"hc_attn_fn.weight", "hc_attn_fn"},
    {"hc_attn_scale.weight", "hc_attn_scale"},
    {"hc_ffn_base.weight", "hc_ffn_base"},
    {"hc_ffn_fn.weight", "hc_ffn_fn"},
    {"hc_ffn_scale.weight", "hc_ffn_scale"},
    {"attn_sinks.weight", "attn.attn_sink"},
    {"attn_q_a.weight", "attn.wq_a.weight"},
    {"attn_q_b.weight", "attn.wq_b.weight"},
    {"attn_q_a_norm.weight", "attn.q_norm.weight"},
    {"attn_kv.weight", "attn.wkv.weight"},
    {"attn_kv_a_norm.weight", "attn.kv_norm.weight"},
    {"attn_output_a.weight", "attn.wo_a.weight"},
    {"attn_output_b.weight", "attn.wo_b.weight"},
    {"attn_compressor_ape.weight", "attn.compressor.ape"},
    {"attn_compressor_kv.weight", "attn.compressor.wkv.weight"},
    {"attn_compressor_gate.weight", "attn.compressor.wgate.weight"},
    {"attn_compressor_norm.weight", "attn.compressor.norm.weight"},
    {"indexer.attn_q_b.weight", "attn.indexer.wq_b.weight"},
    {"indexer.proj.weight", "attn.indexer.weights_proj.weight"},
    {"indexer_compressor_ape.weight", "attn.indexer.compressor.ape"},
    {"indexer_compressor_kv.weight", "attn.indexer.compressor.wkv.weight"},
    {"indexer_compressor_gate.weight", "attn.indexer.compressor.wgate.weight"},
    {"indexer_compressor_norm.weight", "attn.indexer.compressor.norm.weight"},
    {"attn_norm.weight", "attn_norm.weight"},
    {"ffn_norm.weight", "ffn_norm.weight"},
    {"ffn_gate_shexp.weight", "ffn.shared_experts.w1.weight"},
    {"ffn_up_shexp.weight", "ffn.shared_experts.w3.weight"},
    {"ffn_down_shexp.weight", "ffn.shared_experts.w2.weight"},
    {"ffn_gate_inp.weight", "ffn.gate.weight"},
    {"exp_probs_b.bias", "ffn.gate.bias"},
    {"ffn_gate_tid2eid.weight", "ffn.gate.tid2eid"},
};

std::string_view local(const std::string& name) {
  std::string_view n = name;
  return n.substr(n.find('.', 4) + 1);
}

}  // namespace

std::optional<std::string> official_name(const gguf::TensorRule& rule) {
  if (rule.layer < 0) {
    for (const NamePair& p : kGlobal)
      if (p.gguf == rule.name) return std::string(p.hf);
    return std::nullopt;
  }
  const std::string_view l = local(rule.name);
  for (const NamePair& p : kLayer)
    if (p.gguf == l) return "layers." + std::to_string(rule.layer) + "." + std::string(p.hf);
  return std::nullopt;
}

std::optional<ExpertName> official_expert_name(const gguf::TensorRule& rule) {
  if (rule.layer < 0) return std::nullopt;
  const std::string_view l = local(rule.name);
  const char* part = l == "ffn_gate_exps.weight"   ? ".w1"
                     : l == "ffn_up_exps.weight"   ? ".w3"
                     : l == "ffn_down_exps.weight" ? ".w2"
                                                   : nullptr;
  if (!part) return std::nullopt;
  return ExpertName{"layers." + std::to_string(rule.layer) + ".ffn.experts.", part};
}

std::string scale_name_for(const std::string& weight_name) {
  const std::string_view suffix = ".weight";
  if (weight_name.size() > suffix.size() &&
      weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return weight_name.substr(0, weight_name.size() - suffix.size()) + ".scale";
  return weight_name + ".scale";
}

}  // namespace ds4::convert
