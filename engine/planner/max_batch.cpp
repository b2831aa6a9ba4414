// Live contexts in the plan; see max_batch.hpp.
#include "engine/planner/max_batch.hpp"

#include "engine/planner/auto_budget.hpp"

namespace ds4::planner {

uint64_t choose_max_batch(const PlanInput& in, uint64_t cap) {
  PlanInput trial = in;
  uint64_t best = 1;
  // Each context adds the same KV, so the headroom falls with N: the first N that misses ends it.
  for (uint64_t n = 1; n <= cap; ++n) {
    trial.live_contexts = n;
    if (compute_plan(trial).verdict != Verdict::Fits) break;
    best = n;
  }
  return best;
}

void resolve_live_contexts(PlanInput& in, std::optional<uint64_t> max_batch) {
  if (max_batch) {
    in.live_contexts = *max_batch;
    return;
  }
  in.live_contexts = choose_max_batch(in);
  in.auto_terms |= kAutoMaxBatch;
}

}  // namespace ds4::planner
