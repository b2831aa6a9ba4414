// A configuration's memory plan; see memory_budget.hpp.
#include "config/memory_budget.hpp"

#include "config/drafter_spec.hpp"
#include "engine/planner/plan_from_gguf.hpp"

namespace ds4::config {

planner::Plan plan_for_config(const Config& cfg, uint64_t mem_total_bytes) {
  planner::GgufPlanRequest r;
  r.model_path = cfg.model.path;
  // Only an MTP drafter has weights of its own; ngram costs nothing the plan counts.
  const DrafterSpec drafter = parse_drafter(cfg.speculation.drafter);
  if (drafter.kind == DrafterKind::Mtp) r.drafter_path = drafter.path;
  if (cfg.speculation.sidecar_bytes != 0) r.sidecar_bytes = cfg.speculation.sidecar_bytes;
  r.budgets.context_tokens = cfg.model.context;
  r.budgets.hot_cache_bytes = cfg.cache.hot_bytes;
  r.budgets.reserve_bytes = cfg.memory.reserve;
  r.budgets.floor_bytes = cfg.memory.floor;
  r.budgets.swap_bytes = cfg.memory.swap_size;
  if (cfg.server.max_batch) r.budgets.max_batch = *cfg.server.max_batch;
  r.prefill_cap = cfg.model.prefill_cap;
  r.workspace_bytes = cfg.memory.workspace;
  r.mem_total_bytes = mem_total_bytes;
  return planner::compute_plan(planner::plan_input_from_gguf(r));
}

Config with_planned_budgets(Config cfg, const planner::Plan& plan) {
  const planner::PlanInput& in = plan.input;
  if (!cfg.model.context) cfg.model.context = in.context_tokens;
  if (!cfg.cache.hot_bytes) cfg.cache.hot_bytes = in.hot_cache_bytes;
  if (!cfg.memory.reserve) cfg.memory.reserve = in.reserve_bytes;
  if (!cfg.memory.floor) cfg.memory.floor = in.floor_bytes;
  if (!cfg.memory.swap_size) cfg.memory.swap_size = in.swap_bytes;
  if (!cfg.server.max_batch) cfg.server.max_batch = static_cast<uint32_t>(in.live_contexts);
  return cfg;
}

}  // namespace ds4::config
