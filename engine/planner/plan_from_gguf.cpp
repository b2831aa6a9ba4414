// GGUF → PlanInput; see plan_from_gguf.hpp.
#include "engine/planner/plan_from_gguf.hpp"

#include <set>
#include <string>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/planner/max_batch.hpp"

namespace ds4::planner {
namespace {

std::string layer_tensor(uint32_t layer, const char* suffix) { return "blk." + std::to_string(layer) + "." + suffix; }

}  // namespace

ModelFacts read_model_facts(const gguf::GgufFile& f) {
  ModelFacts m;
  const std::string arch = f.get<std::string>("general.architecture");
  const std::string p = arch + ".";
  m.name = f.get_or<std::string>("general.name", arch);
  m.file_bytes = f.size();
  m.trained_context = f.get_or<uint64_t>(p + "context_length", 0);

  const uint32_t n_layers = f.get<uint32_t>(p + "block_count");
  const std::vector<uint32_t> ratios = f.get_array<uint32_t>(p + "attention.compress_ratios");
  if (ratios.size() < n_layers)
    throw gguf::GgufError(f.path(), std::nullopt,
                          p + "attention.compress_ratios has " + std::to_string(ratios.size()) + " entries for " +
                              std::to_string(n_layers) + " layers");
  KvGeometry& g = m.kv;
  g.latent_dim = f.get<uint32_t>(p + "attention.key_length");
  g.indexer_dim = f.get_or<uint32_t>(p + "attention.indexer.key_length", 0);
  g.window = f.get<uint32_t>(p + "attention.sliding_window");
  for (uint32_t i = 0; i < n_layers; ++i) {
    KvLayer l;
    l.ratio = ratios[i];
    if (l.ratio != 0) {
      // The compressor's positional bias is [overlap*latent_dim, ratio]: its width gives the
      // overlap factor without assuming DS4 Flash's "2 for ratio 4".
      const std::string ape = layer_tensor(i, "attn_compressor_ape.weight");
      const gguf::TensorInfo& t = f.tensor(ape);
      if (t.dims.empty() || t.dims[0] % g.latent_dim != 0 || t.dims[0] == 0)
        throw gguf::GgufError(f.path(), t.info_offset, ape + ": width is not a multiple of attention.key_length");
      l.overlap = static_cast<uint32_t>(t.dims[0] / g.latent_dim);
      l.indexer = f.find_tensor(layer_tensor(i, "indexer.proj.weight")) != nullptr;
      if (l.indexer && g.indexer_dim == 0)
        throw gguf::GgufError(
            f.path(), std::nullopt,
            "layer " + std::to_string(i) + " has an indexer but " + p + "attention.indexer.key_length is missing");
    }
    g.layers.push_back(l);
  }

  ActivationDims& d = m.dims;
  d.embedding = f.get<uint64_t>(p + "embedding_length");
  d.vocab = f.get<uint64_t>(p + "vocab_size");
  d.heads = f.get<uint64_t>(p + "attention.head_count");
  d.head_dim = g.latent_dim;
  d.q_lora = f.get_or<uint64_t>(p + "attention.q_lora_rank", 0);
  d.hc_streams = f.get_or<uint64_t>(p + "hyper_connection.count", 1);
  d.experts = f.get_or<uint64_t>(p + "expert_count", 0);
  d.experts_used = f.get_or<uint64_t>(p + "expert_used_count", 0);
  d.experts_shared = f.get_or<uint64_t>(p + "expert_shared_count", 0);
  d.expert_ff = f.get_or<uint64_t>(p + "expert_feed_forward_length", 0);
  d.indexer_heads = f.get_or<uint64_t>(p + "attention.indexer.head_count", 0);
  d.indexer_dim = g.indexer_dim;
  d.out_groups = f.get_or<uint64_t>(p + "attention.output_group_count", 0);
  d.out_rank = f.get_or<uint64_t>(p + "attention.output_lora_rank", 0);
  d.layers = g.layers.size();
  return m;
}

uint32_t count_drafter_blocks(const gguf::GgufFile& f) {
  std::set<std::string> blocks;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::string& n = t.name;
    if (n.rfind("mtp.", 0) != 0) continue;
    const size_t dot = n.find('.', 4);
    if (dot == std::string::npos) continue;
    if (n.compare(dot, std::string::npos, ".attn_kv.weight") == 0) blocks.insert(n.substr(0, dot));
  }
  return static_cast<uint32_t>(blocks.size());
}

PlanInput plan_input_from_gguf(const GgufPlanRequest& r) {
  const gguf::GgufFile target = gguf::GgufFile::open(r.model_path);
  ModelFacts m = read_model_facts(target);
  PlanInput in;
  in.model_name = m.name;
  in.weights_bytes = m.file_bytes;
  if (!r.drafter_path.empty()) {
    const gguf::GgufFile drafter = gguf::GgufFile::open(r.drafter_path);
    m.kv.drafter_layers = count_drafter_blocks(drafter);
    m.kv.drafter_state_row = m.dims.hc_streams * m.dims.embedding * 4;
    in.sidecar_bytes = drafter.size();
  }
  if (r.sidecar_bytes) in.sidecar_bytes = *r.sidecar_bytes;
  in.workspace_bytes = r.workspace_bytes ? *r.workspace_bytes : workspace_estimate(m.dims, r.prefill_cap);
  if (!r.workspace_bytes && !r.drafter_path.empty()) {
    in.drafter_workspace_bytes = drafter_workspace(m.dims);
    in.workspace_bytes += in.drafter_workspace_bytes;
  }
  in.mem_total_bytes = r.mem_total_bytes;

  BudgetFacts facts;
  facts.mem_total_bytes = r.mem_total_bytes;
  facts.weights_bytes = in.weights_bytes;
  facts.sidecar_bytes = in.sidecar_bytes;
  facts.workspace_bytes = in.workspace_bytes;
  facts.trained_context = m.trained_context;
  facts.kv_bytes = [&](uint64_t ctx) { return kv_cost(m.kv, ctx, r.prefill_cap).total(ctx); };
  const Budgets b = resolve_budgets(facts, r.budgets);
  in.context_tokens = b.context_tokens;
  if (in.context_tokens == 0)
    throw gguf::GgufError(r.model_path, std::nullopt,
                          "no context length given and the model has no context_length key");
  const KvCost kv = kv_cost(m.kv, in.context_tokens, r.prefill_cap);
  in.kv_bytes_per_token = kv.bytes_per_token;
  in.kv_fixed_bytes = kv.fixed_bytes();
  in.hot_cache_bytes = b.hot_cache_bytes;
  in.reserve_bytes = b.reserve_bytes;
  in.floor_bytes = b.floor_bytes;
  in.swap_bytes = b.swap_bytes;
  in.auto_terms = b.auto_terms;
  resolve_live_contexts(in, r.budgets.max_batch);
  return in;
}

}  // namespace ds4::planner
