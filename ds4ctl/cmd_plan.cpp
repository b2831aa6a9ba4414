// ds4ctl plan: the memory capacity plan for a model on this machine (or on figures given
// directly), printed term by term in GiB and exact bytes, with a verdict and an exit status per
// verdict: 0 fits, 3 below the floor, 4 does not fit, 2 error. Defaults match ds4d's
// configuration defaults (the budgets, live contexts included, are `auto`, resolved by the same
// planner functions the supervisor and the daemon call), so `ds4ctl plan --model X` answers "will
// ds4d start with X here, and with which context, hot cache and max batch?". The last line says
// which device would run it (--backend, as ds4d's) and where the weights would go for the GPU.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "ds4ctl/command_registry.hpp"
#include "engine/cuda/backend_choice.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/placement.hpp"
#include "engine/planner/auto_budget.hpp"
#include "engine/planner/byte_size.hpp"
#include "engine/planner/max_batch.hpp"
#include "engine/planner/memory_plan.hpp"
#include "engine/planner/plan_from_gguf.hpp"
#include "host/host_memory.hpp"

namespace {

struct PlanOptions {
  std::string model, drafter, meminfo = "/proc/meminfo";
  std::string sidecar, hot_cache = "auto", workspace, reserve = "auto", floor = "auto", swap = "auto", mem_total,
                       weights;
  std::string context = "auto";
  std::string max_batch = "auto";
  uint32_t prefill_cap = ds4::planner::kDefaultPrefillCap;
  uint64_t kv_per_token = 0;
  std::string kv_fixed;
  std::string backend = "auto";
};

std::optional<uint64_t> size_or_none(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return ds4::planner::parse_byte_size(s);
}

// "auto" (or empty) → unset: the planner sizes it.
std::optional<uint64_t> size_or_auto(const std::string& s) {
  if (s.empty() || s == "auto") return std::nullopt;
  return ds4::planner::parse_byte_size(s);
}

// A whole number in [lo, hi] or auto (nullopt); otherwise an error naming the flag and the
// expected form.
std::optional<uint64_t> number_or_auto(const std::string& s, const char* flag, const std::string& expected,
                                       uint64_t lo = 0, uint64_t hi = UINT64_MAX) {
  if (s.empty() || s == "auto") return std::nullopt;
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s[0] == '-' || v < lo || v > hi)
    throw std::invalid_argument(std::string(flag) + ": expected " + expected + " or auto, got '" + s + "'");
  return v;
}

ds4::planner::BudgetChoice budget_choice(const PlanOptions& o) {
  ds4::planner::BudgetChoice c;
  c.context_tokens = number_or_auto(o.context, "--context", "tokens");
  c.hot_cache_bytes = size_or_auto(o.hot_cache);
  c.reserve_bytes = size_or_auto(o.reserve);
  c.floor_bytes = size_or_auto(o.floor);
  c.swap_bytes = size_or_auto(o.swap);
  c.max_batch = number_or_auto(o.max_batch, "--max-batch", "1.." + std::to_string(ds4::planner::kMaxBatchLimit), 1,
                               ds4::planner::kMaxBatchLimit);
  return c;
}

// The device line (docs/cuda.md §placement): the backend ds4d would pick with `backend`, and on a
// GPU the weights' placement with the plan's device state (planner::device_state_bytes). False
// when `cuda` was asked for and the model does not fit the device (the CPU is never put in its
// place).
bool print_device(const std::string& backend, uint64_t weights, uint64_t state) {
  namespace cuda = ds4::cuda;
  const cuda::Backend requested = cuda::parse_backend(backend);
  const cuda::BackendDecision d = cuda::choose_backend(requested);  // throws for cuda without a GPU
  if (d.use == cuda::Backend::Cpu) {
    std::cout << "device: CPU" << (d.log_line.empty() ? " (--backend cpu)" : " -- " + d.log_line) << "\n";
    return true;
  }
  const cuda::DeviceInfo info = cuda::probe();
  const cuda::Placement p = cuda::place_on_device(weights, state);
  if (p.weights == cuda::WeightPlacement::DoesNotFit) {
    std::cout << "device: " << (requested == cuda::Backend::Cuda ? "does not fit " : "CPU, the model does not fit ")
              << info.name << " -- " << p.reason << "\n";
    return requested != cuda::Backend::Cuda;
  }
  std::cout << "device: CUDA on " << info.name << ", weights " << cuda::placement_name(p.weights) << " -- " << p.reason
            << "\n";
  return true;
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
    r.budgets = budget_choice(o);
    r.prefill_cap = o.prefill_cap;
    r.workspace_bytes = size_or_none(o.workspace);
    r.mem_total_bytes = mem_total;
    in = plan_input_from_gguf(r);
  } else {
    if (o.weights.empty() || o.kv_per_token == 0)
      throw std::invalid_argument("give --model FILE, or --weights, --kv-per-token (and --kv-fixed) directly");
    in.model_name = "figures given on the command line";
    in.weights_bytes = parse_byte_size(o.weights);
    in.sidecar_bytes = size_or_none(o.sidecar).value_or(0);
    in.kv_bytes_per_token = o.kv_per_token;
    in.kv_fixed_bytes = size_or_none(o.kv_fixed).value_or(0);
    in.workspace_bytes = size_or_none(o.workspace).value_or(0);
    in.mem_total_bytes = mem_total;
    BudgetFacts facts;
    facts.mem_total_bytes = mem_total;
    facts.weights_bytes = in.weights_bytes;
    facts.sidecar_bytes = in.sidecar_bytes;
    facts.workspace_bytes = in.workspace_bytes;
    facts.kv_bytes = [&in](uint64_t ctx) { return in.kv_bytes_per_token * ctx + in.kv_fixed_bytes; };
    const BudgetChoice choice = budget_choice(o);
    if (choice.context_tokens && *choice.context_tokens == 0)
      throw std::invalid_argument("--context 0 (the model's trained length) needs --model");
    const Budgets b = resolve_budgets(facts, choice);
    in.context_tokens = b.context_tokens;
    in.hot_cache_bytes = b.hot_cache_bytes;
    in.reserve_bytes = b.reserve_bytes;
    in.floor_bytes = b.floor_bytes;
    in.swap_bytes = b.swap_bytes;
    in.auto_terms = b.auto_terms;
    resolve_live_contexts(in, choice.max_batch);
  }
  const Plan plan = compute_plan(in);
  std::cout << render_report(plan);
  const bool device_fits = print_device(o.backend, in.weights_bytes, device_state_bytes(plan));
  return device_fits ? exit_code(plan.verdict) : exit_code(Verdict::DoesNotFit);
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
      sub.add_option("--context,-c", o->context, "context length in tokens (0: the model's; auto: sized to fit)")
          ->capture_default_str();
      sub.add_option("--max-batch", o->max_batch,
                     "sessions decoded together, each holding its own KV (auto: the most, up to 8, that fit)")
          ->capture_default_str();
      sub.add_option("--prefill-cap", o->prefill_cap, "prefill batch (sizes the raw KV ring)")->capture_default_str();
      sub.add_option("--hot-cache", o->hot_cache, "in-RAM checkpoint cache (auto: what the plan leaves, at most 12GiB)")
          ->capture_default_str();
      sub.add_option("--workspace", o->workspace, "activation/CUDA workspace (default: estimated from the model)");
      sub.add_option("--reserve", o->reserve, "OS and other processes (auto: 4GiB scaled to MemTotal)")
          ->capture_default_str();
      sub.add_option("--floor", o->floor, "minimum headroom (auto: 4GiB scaled to MemTotal)")->capture_default_str();
      sub.add_option("--swap", o->swap, "swap the supervisor ensures (auto: 16GiB scaled to MemTotal)")
          ->capture_default_str();
      sub.add_option("--meminfo", o->meminfo, "meminfo file for MemTotal")->capture_default_str();
      sub.add_option("--mem-total", o->mem_total, "MemTotal to plan against instead of --meminfo (e.g. 127.6GB)");
      sub.add_option("--weights", o->weights, "without --model: weights size");
      sub.add_option("--kv-per-token", o->kv_per_token, "without --model: KV bytes per token (13760 for DS4 Flash)");
      sub.add_option("--kv-fixed", o->kv_fixed, "without --model: fixed KV bytes (rings, compressor states)");
      sub.add_option("--backend", o->backend, "the device ds4d would use: auto, cpu or cuda (as engine.backend)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
          ->capture_default_str();
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
