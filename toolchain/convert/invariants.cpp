// The four invariants (and the engine's layout check) on a written file; see invariants.hpp.
#include "toolchain/convert/invariants.hpp"

#include "engine/gguf/gguf_reader.hpp"

namespace ds4::convert {

std::vector<Invariant> check_invariants(const std::string& gguf_path, const OfficialConfig& cfg,
                                        const ConvertPlan& plan) {
  std::vector<Invariant> out;
  const gguf::GgufFile f = gguf::GgufFile::open(gguf_path);
  const gguf::Ds4Dims& want = cfg.dims;
  const std::string k = "deepseek4.";

  const std::vector<std::string> layout = gguf::check_ds4_layout(f);
  out.push_back({"engine_layout", layout.empty() ? "the file passes the engine's catalogue check" : layout.front(),
                 layout.empty()});

  out.push_back({"source_coverage",
                 std::to_string(plan.consumed) + " source tensors in exactly one target, " +
                     std::to_string(plan.skipped.size()) + " with a reason, of " + std::to_string(plan.source_tensors),
                 plan.consumed + plan.skipped.size() == plan.source_tensors});
  {
    Invariant inv{"routed_experts", "", true};
    const uint32_t n = f.get<uint32_t>(k + "expert_count");
    uint32_t layers_ok = 0;
    for (const TargetPlan& t : plan.targets) {
      if (t.kind != SourceKind::Fp4Experts) continue;
      const gguf::TensorInfo* ti = f.find_tensor(t.rule.name);
      const bool ok = ti && ti->dims.size() == 3 && ti->dims[2] == want.n_expert && t.weights.size() == want.n_expert;
      for (size_t e = 0; ok && e < t.weights.size(); ++e) {
        const std::string tag = ".experts." + std::to_string(e) + ".";
        if (t.weights[e]->name.find(tag) == std::string::npos)
          inv.ok = false,
          inv.detail = t.rule.name + " expert " + std::to_string(e) + " comes from " + t.weights[e]->name;
      }
      if (!ok)
        inv.ok = false, inv.detail = t.rule.name + " does not hold all " + std::to_string(want.n_expert) + " experts";
      else ++layers_ok;
    }
    if (n != want.n_expert)
      inv.ok = false,
      inv.detail = "expert_count " + std::to_string(n) + " != n_routed_experts " + std::to_string(want.n_expert);
    if (inv.ok)
      inv.detail = std::to_string(n) + "/" + std::to_string(want.n_expert) + " routed experts in each of " +
                   std::to_string(layers_ok / 3) + " layers";
    out.push_back(inv);
  }
  {
    const uint32_t used = f.get<uint32_t>(k + "expert_used_count");
    out.push_back({"top_k",
                   "expert_used_count " + std::to_string(used) + ", config num_experts_per_tok " +
                       std::to_string(want.n_expert_used),
                   used == want.n_expert_used});
  }
  {
    const uint32_t n = f.get<uint32_t>(k + "block_count");
    std::vector<bool> seen(want.n_layer, false);
    for (const gguf::TensorInfo& t : f.tensors())
      if (t.name.rfind("blk.", 0) == 0) {
        const uint32_t l = static_cast<uint32_t>(std::stoul(t.name.substr(4)));
        if (l < seen.size()) seen[l] = true;
      }
    uint32_t present = 0;
    for (bool b : seen) present += b;
    out.push_back({"all_layers",
                   std::to_string(present) + "/" + std::to_string(want.n_layer) + " layers present, block_count " +
                       std::to_string(n),
                   n == want.n_layer && present == want.n_layer && layout.empty()});
  }
  {
    Invariant inv{"sparse_attention", "", true};
    const auto ratios = f.get_array<uint32_t>(k + "attention.compress_ratios");
    const uint32_t top_k = f.get<uint32_t>(k + "attention.indexer.top_k");
    const uint32_t hash = f.get<uint32_t>(k + "hash_layer_count");
    if (std::vector<uint32_t>(ratios.begin(), ratios.begin() + std::min<size_t>(ratios.size(), want.n_layer)) !=
        want.compress_ratios)
      inv.ok = false, inv.detail = "compress_ratios differ from config.json";
    if (top_k != want.indexer_top_k)
      inv.ok = false,
      inv.detail = "indexer top_k " + std::to_string(top_k) + " != index_topk " + std::to_string(want.indexer_top_k);
    if (hash != want.n_hash_layer) inv.ok = false, inv.detail = "hash_layer_count differs from num_hash_layers";
    uint32_t idx_layers = 0;
    for (uint32_t l = 0; l < want.n_layer; ++l) {
      if (want.compress_ratios[l] != 4) continue;
      const std::string b = "blk." + std::to_string(l) + ".";
      for (const char* n :
           {"indexer.attn_q_b.weight", "indexer.proj.weight", "indexer_compressor_kv.weight",
            "indexer_compressor_gate.weight", "indexer_compressor_ape.weight", "indexer_compressor_norm.weight"})
        if (!f.find_tensor(b + n)) inv.ok = false, inv.detail = "missing " + b + n;
      ++idx_layers;
    }
    if (inv.ok)
      inv.detail = "compress_ratios as config, indexer top-" + std::to_string(top_k) + " on " +
                   std::to_string(idx_layers) + " ratio-4 layers, " + std::to_string(hash) + " hash layers";
    out.push_back(inv);
  }
  return out;
}

}  // namespace ds4::convert
