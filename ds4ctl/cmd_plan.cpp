// ds4ctl plan: the memory capacity plan for a model on this machine (or on figures given
// directly), printed term by term in GiB and exact bytes, with a verdict and an exit status per
// verdict: 0 fits, 3 below the floor, 4 does not fit, 2 error. Defaults match ds4d's
// configuration defaults, so `ds4ctl plan --model X` answers "will ds4d start with X here?".
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "ds4ctl/command_registry.hpp"
#include "engine/planner/byte_size.hpp"
#include "engine/planner/memory_plan.hpp"
#include "engine/planner/plan_from_gguf.hpp"
#include "host/host_memory.hpp"

namespace {

struct PlanOptions {
  std::string model, drafter, meminfo = "/proc/meminfo";
  std::string sidecar, hot_cache = "12GiB", workspace, reserve = "4GiB", floor = "4GiB", mem_total, weights;
  uint64_t context = 262144;
  uint32_t prefill_cap = ds4::planner::kDefaultPrefillCap;
  uint64_t kv_per_token = 0;
  std::string kv_fixed;
};

std::optional<uint64_t> size_or_none(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return ds4::planner::parse_byte_size(s);
}

int run_plan(const PlanOptions& o) {
  using namespace ds4::planner;
  const uint64_t mem_total =
      o.mem_total.empty() ? ds4::host::read_meminfo(o.meminfo).mem_total : parse_byte_size(o.mem_total);
  PlanInput in;
  if (!o.model.empty()) {
    GgufPlanRequest r;
    r.model_path = o.model;
    r.drafter_path = o.drafter;
    r.sidecar_bytes = size_or_none(o.sidecar);
    r.context_tokens = o.context;
    r.prefill_cap = o.prefill_cap;
    r.hot_cache_bytes = parse_byte_size(o.hot_cache);
    r.workspace_bytes = size_or_none(o.workspace);
    r.reserve_bytes = parse_byte_size(o.reserve);
    r.floor_bytes = parse_byte_size(o.floor);
    r.mem_total_bytes = mem_total;
    in = plan_input_from_gguf(r);
  } else {
    if (o.weights.empty() || o.kv_per_token == 0)
      throw std::invalid_argument("give --model FILE, or --weights, --kv-per-token (and --kv-fixed) directly");
    in.model_name = "figures given on the command line";
    in.weights_bytes = parse_byte_size(o.weights);
    in.sidecar_bytes = size_or_none(o.sidecar).value_or(0);
    in.context_tokens = o.context;
    in.kv_bytes_per_token = o.kv_per_token;
    in.kv_fixed_bytes = size_or_none(o.kv_fixed).value_or(0);
    in.hot_cache_bytes = parse_byte_size(o.hot_cache);
    in.workspace_bytes = size_or_none(o.workspace).value_or(0);
    in.reserve_bytes = parse_byte_size(o.reserve);
    in.floor_bytes = parse_byte_size(o.floor);
    in.mem_total_bytes = mem_total;
  }
  const Plan plan = compute_plan(in);
  std::cout << render_report(plan);
  return exit_code(plan.verdict);
}

ds4ctl::Register reg{
    "plan",
    "memory plan: weights + sidecar + hot cache + KV + workspace + reserve against MemTotal "
    "(exit 0 fits, 3 below floor, 4 does not fit, 2 error)",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<PlanOptions>();
      sub.add_option("--model,-m", o->model, "target model GGUF (KV geometry and size come from it)");
      sub.add_option("--drafter", o->drafter, "drafter (MTP) GGUF; its size is the sidecar");
      sub.add_option("--sidecar", o->sidecar, "sidecar size, overriding the drafter's file size (e.g. 5.64GiB)");
      sub.add_option("--context,-c", o->context, "context length in tokens (0: the model's)")->capture_default_str();
      sub.add_option("--prefill-cap", o->prefill_cap, "prefill batch (sizes the raw KV ring)")->capture_default_str();
      sub.add_option("--hot-cache", o->hot_cache, "in-RAM checkpoint cache")->capture_default_str();
      sub.add_option("--workspace", o->workspace, "activation/CUDA workspace (default: estimated from the model)");
      sub.add_option("--reserve", o->reserve, "OS and other processes")->capture_default_str();
      sub.add_option("--floor", o->floor, "minimum headroom")->capture_default_str();
      sub.add_option("--meminfo", o->meminfo, "meminfo file for MemTotal")->capture_default_str();
      sub.add_option("--mem-total", o->mem_total, "MemTotal to plan against instead of --meminfo (e.g. 127.6GB)");
      sub.add_option("--weights", o->weights, "without --model: weights size");
      sub.add_option("--kv-per-token", o->kv_per_token, "without --model: KV bytes per token (13760 for DS4 Flash)");
      sub.add_option("--kv-fixed", o->kv_fixed, "without --model: fixed KV bytes (rings, compressor states)");
      return [o] {
        try {
          return run_plan(*o);
        } catch (const std::exception& e) {
          std::cerr << "ds4ctl plan: " << e.what() << "\n";
          return ds4::planner::kExitError;
        }
      };
    }};

}  // namespace
