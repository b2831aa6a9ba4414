// Plan, swap and earlyoom from the configuration; see host_preparation.hpp.
#include "supervisor/host_preparation.hpp"

#include <spdlog/spdlog.h>

#include "config/memory_budget.hpp"
#include "host/earlyoom_dropin.hpp"
#include "host/host_memory.hpp"
#include "host/swap_file.hpp"

namespace ds4::supervisor {

planner::Plan plan_for_config(const config::Config& cfg, const host::Sysroot& root) {
  return config::plan_for_config(cfg, host::read_meminfo(root.path(cfg.memory.meminfo_path)).mem_total);
}

void prepare_host(const config::Config& cfg, const planner::Plan& plan, host::SystemChanges& changes) {
  host::SwapRequest swap;
  swap.file = cfg.memory.swap_file;
  swap.size_bytes = plan.input.swap_bytes;
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
