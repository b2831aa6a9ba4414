#pragma once
// The memory plan of a configuration, and the configuration with its `auto` budgets filled in.
// The supervisor (which refuses to start a plan that does not fit) and the daemon (which sizes
// its context, hot cache, admission floor and max batch from it) both call these with the same
// file and the same MemTotal, so they arrive at the same figures; ds4ctl plan goes through the
// same planner::plan_input_from_gguf with the same defaults.
#include <cstdint>

#include "config/config.hpp"
#include "engine/planner/memory_plan.hpp"

namespace ds4::config {

// The plan for cfg's model, drafter and budgets against mem_total_bytes. Reads the GGUF headers
// only. Throws gguf::GgufError (naming the file) when the model cannot be read.
planner::Plan plan_for_config(const Config& cfg, uint64_t mem_total_bytes);

// cfg with every `auto` budget replaced by the figure the plan chose; explicit ones unchanged.
Config with_planned_budgets(Config cfg, const planner::Plan& plan);

}  // namespace ds4::config
