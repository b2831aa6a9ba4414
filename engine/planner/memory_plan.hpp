#pragma once
// The capacity plan: will this model, with this context and cache configuration, fit in this
// machine's RAM with the required headroom left over?
//
//   weights + sidecar + hot cache + KV + workspace + reserve = total   vs   MemTotal
//
// * weights: the target GGUF, mapped whole (file size).
// * sidecar: the drafter (MTP) GGUF mapped beside it, or any other resident extra the operator
//   names; 0 when there is none.
// * hot cache: the in-RAM checkpoint cache (configured size).
// * KV: bytes per token × context + fixed costs (rings, compressor states), from kv_geometry.
// * workspace: activation and CUDA scratch (workspace_estimate.hpp, or a configured figure).
// * reserve: the OS and every other resident process.
//
// headroom = MemTotal − total. The verdict: headroom ≥ floor → fits; 0 ≤ headroom < floor →
// below floor (it loads, but steady state leaves less than the floor, so the daemon's admission
// gate would refuse work); headroom < 0 → does not fit. Each verdict has its own process exit
// code so scripts and the supervisor can tell them apart.
//
// The input is a plain struct so the plan can be computed from a GGUF (plan_from_gguf.hpp) or
// from figures typed in directly (tests, "what if" questions).
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
  uint64_t workspace_bytes = 0;
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
  uint64_t kv_bytes = 0;
  uint64_t total_bytes = 0;
  int64_t headroom_bytes = 0;  // MemTotal − total; negative when it does not fit
  Verdict verdict = Verdict::DoesNotFit;
};

Plan compute_plan(const PlanInput& in);

const char* verdict_name(Verdict v);  // "fits", "below floor", "does not fit"
int exit_code(Verdict v);

// The human-readable report: one line per term in GiB and exact bytes, the sum, MemTotal,
// headroom, floor and the verdict with a sentence saying what to change when it does not fit.
std::string render_report(const Plan& plan);

}  // namespace ds4::planner
