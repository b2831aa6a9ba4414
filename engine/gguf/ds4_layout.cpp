// The DS4 catalogue: shape rules of docs/model.md §gguf-tensors written as functions of Ds4Dims, and
// the checker that compares a file's tensor table against them.
#include "engine/gguf/ds4_layout.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace ds4::gguf {

using quant::Type;

std::string_view family_name(Family f) {
  switch (f) {
    case Family::RoutedExperts: return "routed experts";
    case Family::Attention: return "attention";
    case Family::SharedExpert: return "shared expert";
    case Family::Embedding: return "embedding";
    case Family::OutputHead: return "output head";
    case Family::Router: return "router";
    case Family::HyperConnection: return "hyper-connection";
    case Family::CompressorIndexer: return "compressor/indexer";
    case Family::Norms: return "norms";
  }
  return "?";
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Strips "blk.<n>." and returns the rest; nullopt if the prefix is malformed.
std::optional<std::string_view> layer_local_name(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return name;
  size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot == 4) return std::nullopt;
  for (size_t i = 4; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
  return name.substr(dot + 1);
}

}  // namespace

std::optional<Family> family_of(std::string_view tensor_name) {
  auto local = layer_local_name(tensor_name);
  if (!local) return std::nullopt;
  std::string_view n = *local;
  if (!ends_with(n, ".weight") && !ends_with(n, ".bias")) return std::nullopt;
  n = n.substr(0, n.rfind('.'));
  if (n == "token_embd") return Family::Embedding;
  if (n == "output") return Family::OutputHead;
  if (ends_with(n, "_norm") || n == "attn_norm" || n == "ffn_norm") return Family::Norms;
  if (n.substr(0, 3) == "hc_" || n.substr(0, 10) == "output_hc_") return Family::HyperConnection;
  if (ends_with(n, "_exps")) return Family::RoutedExperts;
  if (ends_with(n, "_shexp")) return Family::SharedExpert;
  if (n == "ffn_gate_inp" || n == "exp_probs_b" || n == "ffn_gate_tid2eid") return Family::Router;
  if (n.substr(0, 16) == "attn_compressor_" || n.substr(0, 8) == "indexer.") return Family::CompressorIndexer;
  if (n.substr(0, 18) == "indexer_compressor") return Family::CompressorIndexer;
  if (n.substr(0, 5) == "attn_") return Family::Attention;
  return std::nullopt;
}

Ds4Dims Ds4Dims::from_metadata(const GgufFile& f) {
  auto fail = [&](std::string_view key, const std::string& msg) -> void {
    throw GgufError(f.path(), std::nullopt, "metadata key '" + std::string(key) + "': " + msg);
  };
  auto u32 = [&](std::string_view key, uint32_t lo, uint32_t hi) {
    uint32_t v = f.get<uint32_t>(key);
    if (v < lo || v > hi)
      fail(key, "value " + std::to_string(v) + " is outside the plausible range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
    return v;
  };
  const std::string arch = f.get<std::string>("general.architecture");
  if (arch != "deepseek4") fail("general.architecture", "is '" + arch + "', expected 'deepseek4'");
  const std::string p = "deepseek4.";
  Ds4Dims d;
  d.n_layer = u32(p + "block_count", 1, 1024);
  d.n_embd = u32(p + "embedding_length", 1, 1u << 16);
  d.n_vocab = u32(p + "vocab_size", 1, 1u << 22);
  d.n_head = u32(p + "attention.head_count", 1, 1024);
  d.n_head_kv = u32(p + "attention.head_count_kv", 1, 1);
  d.head_dim = u32(p + "attention.key_length", 1, 4096);
  d.value_dim = u32(p + "attention.value_length", d.head_dim, d.head_dim);
  d.rope_dim = u32(p + "rope.dimension_count", 2, d.head_dim);
  d.q_lora_rank = u32(p + "attention.q_lora_rank", 1, 1u << 16);
  d.out_lora_rank = u32(p + "attention.output_lora_rank", 1, 1u << 16);
  d.out_groups = u32(p + "attention.output_group_count", 1, d.n_head);
  if (d.n_head % d.out_groups != 0)
    fail(p + "attention.output_group_count", "does not divide the head count " + std::to_string(d.n_head));
  d.n_expert = u32(p + "expert_count", 1, 4096);
  d.n_expert_used = u32(p + "expert_used_count", 1, d.n_expert);
  d.n_expert_shared = u32(p + "expert_shared_count", 1, 1);
  d.expert_ff = u32(p + "expert_feed_forward_length", 1, 1u << 16);
  d.n_hash_layer = u32(p + "hash_layer_count", 0, d.n_layer);
  d.sliding_window = u32(p + "attention.sliding_window", 1, 1u << 20);
  d.indexer_heads = u32(p + "attention.indexer.head_count", 1, 1024);
  d.indexer_dim = u32(p + "attention.indexer.key_length", 1, 4096);
  d.indexer_top_k = u32(p + "attention.indexer.top_k", 1, 1u << 20);
  d.hc_count = u32(p + "hyper_connection.count", 1, 16);
  d.hc_sinkhorn_iters = u32(p + "hyper_connection.sinkhorn_iterations", 1, 1000);
  for (const char* key : {"expert_group_count", "expert_group_used_count"})
    if (f.has(p + key)) u32(p + key, 0, 0);
  d.compress_ratios = f.get_array<uint32_t>(p + "attention.compress_ratios");
  if (d.compress_ratios.size() < d.n_layer)
    fail(p + "attention.compress_ratios",
         "has " + std::to_string(d.compress_ratios.size()) + " entries for " + std::to_string(d.n_layer) + " layers");
  d.compress_ratios.resize(d.n_layer);
  for (size_t i = 0; i < d.compress_ratios.size(); ++i)
    if (d.compress_ratios[i] != 0 && d.compress_ratios[i] != 4 && d.compress_ratios[i] != 128)
      fail(p + "attention.compress_ratios", "layer " + std::to_string(i) + " has ratio " +
                                                std::to_string(d.compress_ratios[i]) + " (allowed: 0, 4, 128)");
  const std::string clamp = p + "swiglu_clamp_exp";
  if (f.get_array<double>(clamp).size() < d.n_layer) fail(clamp, "has fewer entries than layers");
  // Scalars the model reads; here only their presence and type are checked.
  for (const char* key : {"hyper_connection.epsilon", "attention.layer_norm_rms_epsilon", "rope.freq_base",
                          "attention.compress_rope_freq_base", "rope.scaling.factor", "rope.scaling.yarn_beta_fast",
                          "rope.scaling.yarn_beta_slow", "expert_weights_scale"})
    (void)f.get<double>(p + key);
  (void)f.get<uint64_t>(p + "rope.scaling.original_context_length");
  (void)f.get<bool>(p + "expert_weights_norm");
  return d;
}

std::vector<TensorRule> ds4_tensor_catalogue(const Ds4Dims& d) {
  std::vector<TensorRule> rules;
  auto add = [&](std::string name, Family fam, std::vector<Type> types, std::vector<uint64_t> dims, int layer,
                 bool required = true) {
    rules.push_back({std::move(name), fam, std::move(types), std::move(dims), required, layer});
  };
  const std::vector<Type> f32{Type::F32}, f16{Type::F16}, q8{Type::Q8_0}, i32{Type::I32};
  // The model loader binds these as F16 only (ds4 accepts F32 for some of them in the MTP file,
  // which this catalogue does not describe); the catalogue says what the engine loads, so the
  // converter's recipe check can reject a type before writing.
  const std::vector<Type> f16_or_f32{Type::F16};
  const uint64_t E = d.n_embd, V = d.n_vocab;

  add("token_embd.weight", Family::Embedding, f16_or_f32, {E, V}, -1);
  for (uint32_t il = 0; il < d.n_layer; ++il) {
    const int L = static_cast<int>(il);
    const std::string b = "blk." + std::to_string(il) + ".";
    const uint32_t ratio = d.compress_ratios[il];
    auto hc = [&](const std::string& sub) {
      add(b + "hc_" + sub + "_fn.weight", Family::HyperConnection, f16_or_f32, {d.hc_dim(), d.hc_mix()}, L);
      add(b + "hc_" + sub + "_scale.weight", Family::HyperConnection, f32, {3}, L);
      add(b + "hc_" + sub + "_base.weight", Family::HyperConnection, f32, {d.hc_mix()}, L);
    };
    hc("attn");
    add(b + "attn_norm.weight", Family::Norms, f32, {E}, L);
    add(b + "attn_q_a.weight", Family::Attention, q8, {E, d.q_lora_rank}, L);
    add(b + "attn_q_a_norm.weight", Family::Norms, f32, {d.q_lora_rank}, L);
    add(b + "attn_q_b.weight", Family::Attention, q8, {d.q_lora_rank, uint64_t{d.n_head} * d.head_dim}, L);
    add(b + "attn_kv.weight", Family::Attention, q8, {E, d.head_dim}, L);
    add(b + "attn_kv_a_norm.weight", Family::Norms, f32, {d.head_dim}, L);
    add(b + "attn_sinks.weight", Family::Attention, f32, {d.n_head}, L);
    add(b + "attn_output_a.weight", Family::Attention, q8,
        {uint64_t{d.n_head} * d.value_dim / d.out_groups, uint64_t{d.out_groups} * d.out_lora_rank}, L);
    add(b + "attn_output_b.weight", Family::Attention, q8, {uint64_t{d.out_groups} * d.out_lora_rank, E}, L);
    if (ratio != 0) {
      const uint64_t W = d.compressor_width(ratio);
      add(b + "attn_compressor_ape.weight", Family::CompressorIndexer, f16, {W, ratio}, L);
      add(b + "attn_compressor_kv.weight", Family::CompressorIndexer, f16, {E, W}, L);
      add(b + "attn_compressor_gate.weight", Family::CompressorIndexer, f16, {E, W}, L);
      add(b + "attn_compressor_norm.weight", Family::Norms, f32, {d.head_dim}, L);
    }
    if (ratio == 4) {
      const uint64_t IW = 2ull * d.indexer_dim;
      add(b + "indexer.attn_q_b.weight", Family::CompressorIndexer, f16,
          {d.q_lora_rank, uint64_t{d.indexer_heads} * d.indexer_dim}, L);
      add(b + "indexer.proj.weight", Family::CompressorIndexer, f16, {E, d.indexer_heads}, L);
      add(b + "indexer_compressor_ape.weight", Family::CompressorIndexer, f16, {IW, ratio}, L);
      add(b + "indexer_compressor_kv.weight", Family::CompressorIndexer, f16, {E, IW}, L);
      add(b + "indexer_compressor_gate.weight", Family::CompressorIndexer, f16, {E, IW}, L);
      add(b + "indexer_compressor_norm.weight", Family::Norms, f32, {d.indexer_dim}, L);
    }
    hc("ffn");
    add(b + "ffn_norm.weight", Family::Norms, f32, {E}, L);
    add(b + "ffn_gate_inp.weight", Family::Router, f16_or_f32, {E, d.n_expert}, L);
    add(b + "exp_probs_b.bias", Family::Router, f32, {d.n_expert}, L, /*required=*/false);
    if (il < d.n_hash_layer) add(b + "ffn_gate_tid2eid.weight", Family::Router, i32, {d.n_expert_used, V}, L);
    // MXFP4: the release's FP4 experts repacked losslessly (ds4ctl convert --recipe mxfp4).
    const std::vector<Type> gate_up{Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::MXFP4};
    const std::vector<Type> down{Type::Q2_K, Type::IQ2_XXS, Type::Q4_K, Type::MXFP4};
    add(b + "ffn_gate_exps.weight", Family::RoutedExperts, gate_up, {E, d.expert_ff, d.n_expert}, L);
    add(b + "ffn_up_exps.weight", Family::RoutedExperts, gate_up, {E, d.expert_ff, d.n_expert}, L);
    add(b + "ffn_down_exps.weight", Family::RoutedExperts, down, {d.expert_ff, E, d.n_expert}, L);
    add(b + "ffn_gate_shexp.weight", Family::SharedExpert, q8, {E, d.expert_ff}, L);
    add(b + "ffn_up_shexp.weight", Family::SharedExpert, q8, {E, d.expert_ff}, L);
    add(b + "ffn_down_shexp.weight", Family::SharedExpert, q8, {d.expert_ff, E}, L);
  }
  add("output_hc_fn.weight", Family::HyperConnection, f16_or_f32, {d.hc_dim(), d.hc_count}, -1);
  add("output_hc_scale.weight", Family::HyperConnection, f32, {1}, -1);
  add("output_hc_base.weight", Family::HyperConnection, f32, {d.hc_count}, -1);
  add("output_norm.weight", Family::Norms, f32, {E}, -1);
  add("output.weight", Family::OutputHead, q8, {E, V}, -1);
  return rules;
}

uint64_t decode_bytes_per_token(const TensorRule& rule, uint64_t n_bytes, const Ds4Dims& d) {
  if (rule.family == Family::RoutedExperts) return n_bytes / d.n_expert * d.n_expert_used;
  if (rule.family == Family::Embedding || ends_with(rule.name, "ffn_gate_tid2eid.weight")) return n_bytes / d.n_vocab;
  return n_bytes;
}

namespace {

std::string dims_str(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string types_str(const std::vector<Type>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? "|" : "") + std::string(quant::type_info(types[i]).name);
  return s;
}

}  // namespace

std::vector<std::string> check_ds4_layout(const GgufFile& f) {
  std::vector<std::string> issues;
  Ds4Dims d;
  try {
    d = Ds4Dims::from_metadata(f);
  } catch (const GgufError& e) {
    issues.push_back(e.detail());
    return issues;
  }
  const std::vector<TensorRule> rules = ds4_tensor_catalogue(d);
  std::set<std::string_view> expected;
  for (const TensorRule& r : rules) {
    expected.insert(r.name);
    const TensorInfo* t = f.find_tensor(r.name);
    if (!t) {
      if (r.required) issues.push_back("missing tensor '" + r.name + "' (" + std::string(family_name(r.family)) + ")");
      continue;
    }
    if (t->dims != r.dims) {
      std::string why;
      if (r.family == Family::RoutedExperts && t->dims.size() == 3 && t->dims[2] != d.n_expert)
        why = ": holds " + std::to_string(t->dims[2]) + " experts, deepseek4.expert_count is " +
              std::to_string(d.n_expert);
      issues.push_back("tensor '" + r.name + "' has shape " + dims_str(t->dims) + ", metadata implies " +
                       dims_str(r.dims) + why);
    }
    if (std::find(r.allowed.begin(), r.allowed.end(), t->type) == r.allowed.end())
      issues.push_back("tensor '" + r.name + "' has type " + std::string(quant::type_info(t->type).name) +
                       ", the engine accepts " + types_str(r.allowed));
  }
  for (uint32_t il = 0; il < d.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    const TensorInfo* g = f.find_tensor(b + "ffn_gate_exps.weight");
    const TensorInfo* u = f.find_tensor(b + "ffn_up_exps.weight");
    if (g && u && g->type != u->type)
      issues.push_back("tensor '" + u->name + "' has type " + std::string(quant::type_info(u->type).name) +
                       " but the gate experts are " + std::string(quant::type_info(g->type).name) +
                       " (gate and up must match)");
  }
  for (const TensorInfo& t : f.tensors())
    if (!expected.count(t.name)) {
      std::string why = family_of(t.name) ? " (a DS4 tensor name, but not one these metadata dimensions call for)"
                                          : " (not a DS4 tensor name)";
      issues.push_back("unexpected tensor '" + t.name + "'" + why);
    }
  return issues;
}

}  // namespace ds4::gguf
