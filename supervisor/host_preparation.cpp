// Plan, swap and earlyoom from the configuration; see host_preparation.hpp.
#include "supervisor/host_preparation.hpp"

#include <spdlog/spdlog.h>

#include "engine/planner/plan_from_gguf.hpp"
#include "host/earlyoom_dropin.hpp"
#include "host/host_memory.hpp"
#include "host/swap_file.hpp"

namespace ds4::supervisor {

planner::Plan plan_for_config(const config::Config& cfg, const host::Sysroot& root) {
  planner::GgufPlanRequest r;
  r.model_path = cfg.model.path;
  r.drafter_path = cfg.speculation.drafter;
  if (cfg.speculation.sidecar_bytes != 0) r.sidecar_bytes = cfg.speculation.sidecar_bytes;
  r.context_tokens = cfg.model.context;
  r.prefill_cap = cfg.model.prefill_cap;
  r.hot_cache_bytes = cfg.cache.hot_bytes;
  r.workspace_bytes = cfg.memory.workspace;
  r.reserve_bytes = cfg.memory.reserve;
  r.floor_bytes = cfg.memory.floor;
  r.mem_total_bytes = host::read_meminfo(root.path(cfg.memory.meminfo_path)).mem_total;
  return planner::compute_plan(planner::plan_input_from_gguf(r));
}

void prepare_host(const config::Config& cfg, const planner::Plan& plan, host::SystemChanges& changes) {
  host::SwapRequest swap;
  swap.file = cfg.memory.swap_file;
  swap.size_bytes = cfg.memory.swap_size;
  const host::SwapResult s = host::ensure_swap(swap, changes);
  spdlog::debug("swap: {}", host::swap_result_name(s));

  host::EarlyoomSettings eo;
  eo.manage = cfg.memory.earlyoom;
  eo.dropin_path = cfg.memory.earlyoom_dropin;
  if (!eo.manage) {
    host::ensure_earlyoom_dropin(eo, {}, changes);
    return;
  }
  const host::EarlyoomPolicy policy =
      host::earlyoom_policy(plan.input.mem_total_bytes, plan.headroom_bytes, plan.input.floor_bytes,
                            cfg.memory.earlyoom_term_percent, cfg.memory.earlyoom_kill_percent);
  const host::EarlyoomResult e = host::ensure_earlyoom_dropin(eo, policy, changes);
  spdlog::debug("earlyoom: {}", host::earlyoom_result_name(e));
}

}  // namespace ds4::supervisor
