// Capacity plan arithmetic and its report; see memory_plan.hpp.
#include "engine/planner/memory_plan.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "engine/planner/auto_budget.hpp"
#include "engine/planner/byte_size.hpp"

namespace ds4::planner {
namespace {

uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  if (a > UINT64_MAX - b) throw std::overflow_error(std::string("plan total overflows at ") + what);
  return a + b;
}

std::string line(const char* label, uint64_t bytes, bool chosen_by_auto = false) {
  return fmt::format("  {:<11} {:>12}  {:>20} B{}\n", label, format_gib(bytes), format_bytes_exact(bytes),
                     chosen_by_auto ? "  (auto)" : "");
}

std::string signed_line(const char* label, int64_t bytes) {
  const uint64_t mag = bytes < 0 ? static_cast<uint64_t>(-(bytes + 1)) + 1 : static_cast<uint64_t>(bytes);
  // fmt joins the sign (GCC 12 warns, wrongly, of overlapping copies in `sign + std::string`).
  const char* sign = bytes < 0 ? "-" : "";
  return fmt::format("  {:<11} {:>12}  {:>20} B\n", label, fmt::format("{}{}", sign, format_gib(mag)),
                     fmt::format("{}{}", sign, format_bytes_exact(mag)));
}

}  // namespace

Plan compute_plan(const PlanInput& in) {
  Plan p;
  p.input = in;
  if (in.kv_bytes_per_token != 0 && in.context_tokens > UINT64_MAX / in.kv_bytes_per_token)
    throw std::overflow_error("KV bytes overflow: context × bytes per token");
  if (in.live_contexts == 0) throw std::invalid_argument("the plan needs at least 1 live context");
  p.kv_bytes_per_context = checked_add(in.kv_bytes_per_token * in.context_tokens, in.kv_fixed_bytes, "KV");
  if (p.kv_bytes_per_context > UINT64_MAX / in.live_contexts)
    throw std::overflow_error("KV bytes overflow: live contexts × bytes per context");
  p.kv_bytes = p.kv_bytes_per_context * in.live_contexts;
  uint64_t t = in.weights_bytes;
  t = checked_add(t, in.sidecar_bytes, "sidecar");
  t = checked_add(t, in.hot_cache_bytes, "hot cache");
  t = checked_add(t, p.kv_bytes, "KV");
  t = checked_add(t, in.workspace_bytes, "workspace");
  t = checked_add(t, in.reserve_bytes, "reserve");
  p.total_bytes = t;
  if (t > static_cast<uint64_t>(INT64_MAX) || in.mem_total_bytes > static_cast<uint64_t>(INT64_MAX))
    throw std::overflow_error("plan figures exceed 8 EiB");
  p.headroom_bytes = static_cast<int64_t>(in.mem_total_bytes) - static_cast<int64_t>(t);
  if (p.headroom_bytes < 0) p.verdict = Verdict::DoesNotFit;
  else if (static_cast<uint64_t>(p.headroom_bytes) < in.floor_bytes) p.verdict = Verdict::BelowFloor;
  else p.verdict = Verdict::Fits;
  return p;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Fits: return "fits";
    case Verdict::BelowFloor: return "below floor";
    case Verdict::DoesNotFit: return "does not fit";
  }
  return "?";
}

uint64_t device_state_bytes(const Plan& plan) { return plan.kv_bytes + plan.input.workspace_bytes; }

int exit_code(Verdict v) {
  switch (v) {
    case Verdict::Fits: return kExitFits;
    case Verdict::BelowFloor: return kExitBelowFloor;
    case Verdict::DoesNotFit: return kExitDoesNotFit;
  }
  return kExitError;
}

std::string render_report(const Plan& p) {
  const PlanInput& in = p.input;
  std::string s;
  const auto chose = [&](unsigned bit) { return (in.auto_terms & bit) != 0; };
  s += fmt::format("Memory plan for {} at {} tokens of context{}\n", in.model_name.empty() ? "<model>" : in.model_name,
                   in.context_tokens, chose(kAutoContext) ? " (auto)" : "");
  s += line("weights", in.weights_bytes);
  s += line("sidecar", in.sidecar_bytes);
  s += line("hot cache", in.hot_cache_bytes, chose(kAutoHotCache));
  s += line("KV", p.kv_bytes);
  s += fmt::format("    ({} live context{}{} × {}: {} B/token × {} tokens + {} B fixed)\n", in.live_contexts,
                   in.live_contexts == 1 ? "" : "s", chose(kAutoMaxBatch) ? " (auto)" : "",
                   format_gib(p.kv_bytes_per_context), format_bytes_exact(in.kv_bytes_per_token), in.context_tokens,
                   format_bytes_exact(in.kv_fixed_bytes));
  s += line("workspace", in.workspace_bytes);
  if (in.drafter_workspace_bytes != 0)
    s += fmt::format("    (of which the MTP drafter's step: {}, {} B)\n", format_gib(in.drafter_workspace_bytes),
                     format_bytes_exact(in.drafter_workspace_bytes));
  s += line("reserve", in.reserve_bytes, chose(kAutoReserve));
  s += line("= total", p.total_bytes);
  s += line("MemTotal", in.mem_total_bytes);
  s += signed_line("headroom", p.headroom_bytes);
  s += line("floor", in.floor_bytes, chose(kAutoFloor));
  s += line("swap", in.swap_bytes, chose(kAutoSwap));
  s += fmt::format("verdict: {}", verdict_name(p.verdict));
  switch (p.verdict) {
    case Verdict::Fits:
      s += fmt::format(" ({} above the floor)\n", format_gib(static_cast<uint64_t>(p.headroom_bytes) - in.floor_bytes));
      break;
    case Verdict::BelowFloor:
      s += fmt::format(
          ": headroom is {} short of the floor; lower the context, the hot cache, the live contexts "
          "(max batch) or the floor, or drop the sidecar\n",
          format_gib(in.floor_bytes - static_cast<uint64_t>(p.headroom_bytes)));
      break;
    case Verdict::DoesNotFit:
      s += fmt::format(
          ": {} over MemTotal before any headroom; lower the context, the hot cache or the live "
          "contexts (max batch), drop the sidecar, or use a smaller quantization\n",
          format_gib(static_cast<uint64_t>(-p.headroom_bytes)));
      break;
  }
  return s;
}

}  // namespace ds4::planner
