#pragma once
// The supervisor's start-up work before the daemon is launched, from the shared configuration:
//   1. the capacity plan for the configured model (planner, MemTotal from <sysroot>/proc/meminfo);
//      anything but "fits" stops here with the readable report;
//   2. swap of at least memory.swap_size (swap_file.hpp), `auto` resolved by the same plan;
//   3. the earlyoom drop-in with thresholds below the planned headroom (earlyoom_dropin.hpp).
#include <iosfwd>

#include "config/config.hpp"
#include "engine/planner/memory_plan.hpp"
#include "host/system_changes.hpp"

namespace ds4::supervisor {

// config::plan_for_config with MemTotal read from <sysroot>/memory.meminfo_path.
planner::Plan plan_for_config(const config::Config& cfg, const host::Sysroot& root);

// Swap and earlyoom; throws std::runtime_error (or std::invalid_argument for thresholds that
// would fire at steady state) naming the failing step. The swap size is the plan's
// (plan.input.swap_bytes: memory.swap_size, or its `auto` figure).
void prepare_host(const config::Config& cfg, const planner::Plan& plan, host::SystemChanges& changes);

}  // namespace ds4::supervisor
