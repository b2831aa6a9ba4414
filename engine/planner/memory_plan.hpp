#pragma once
// The capacity plan: will this model, with this context and cache configuration, fit in this
// machine's RAM with the required headroom left over? It adds weights, sidecar, hot cache, KV
// (one full context's worth per live context: each session decoded in a batch holds its own),
// workspace and reserve, compares the total with MemTotal and gives one of three verdicts (fits,
// below floor, does not fit), each with its own process exit code. The input is a plain struct, so
// the plan can be computed from a GGUF (plan_from_gguf.hpp) or from figures typed in directly.
// The terms and verdicts: docs/memory.md §the-plan.
#include <cstdint>
#include <string>

namespace ds4::planner {

struct PlanInput {
  std::string model_name;  // for the report only
  uint64_t weights_bytes = 0;
  uint64_t sidecar_bytes = 0;
  uint64_t hot_cache_bytes = 0;
  uint64_t context_tokens = 0;
  uint64_t kv_bytes_per_token = 0;
  uint64_t kv_fixed_bytes = 0;
  uint64_t live_contexts = 1;  // sessions resident at once (server.max_batch); at least 1
  uint64_t workspace_bytes = 0;
  uint64_t drafter_workspace_bytes = 0;  // of workspace_bytes: an MTP drafter's step (drafter_workspace)
  uint64_t reserve_bytes = 0;
  uint64_t mem_total_bytes = 0;  // MemTotal
  uint64_t floor_bytes = 0;      // minimum headroom at steady state
  uint64_t swap_bytes = 0;       // swap the supervisor ensures (not a term of the total)
  unsigned auto_terms = 0;       // AutoTerm bits (auto_budget.hpp): which figures `auto` chose
};

enum class Verdict { Fits, BelowFloor, DoesNotFit };

// Process exit codes of `ds4ctl plan` (and the values the supervisor reports).
inline constexpr int kExitFits = 0;
inline constexpr int kExitError = 2;
inline constexpr int kExitBelowFloor = 3;
inline constexpr int kExitDoesNotFit = 4;

struct Plan {
  PlanInput input;
  uint64_t kv_bytes_per_context = 0;  // bytes per token × context + fixed
  uint64_t kv_bytes = 0;              // kv_bytes_per_context × live contexts
  uint64_t total_bytes = 0;
  int64_t headroom_bytes = 0;  // MemTotal − total; negative when it does not fit
  Verdict verdict = Verdict::DoesNotFit;
};

// Throws std::overflow_error when a sum overflows, std::invalid_argument for 0 live contexts.
Plan compute_plan(const PlanInput& in);

const char* verdict_name(Verdict v);  // "fits", "below floor", "does not fit"
int exit_code(Verdict v);

// What a GPU must hold for this plan beside the weights: every live context's KV (the device
// state mirrors the CPU's) and the workspace (the one pass scratch the contexts share,
// docs/memory.md §scratch). The CUDA placement's state figure (ds4d's reserve, ds4ctl plan).
uint64_t device_state_bytes(const Plan& plan);

// The human-readable report: one line per term in GiB and exact bytes, the sum, MemTotal,
// headroom, floor and the verdict with a sentence saying what to change when it does not fit.
std::string render_report(const Plan& plan);

}  // namespace ds4::planner
