#pragma once
// How many sessions the engine may hold live at once (server.max_batch): each live context keeps
// its own KV, a full context's worth, so the count is a term of the memory plan. An operator's
// count is used as given (and refused by the plan if it does not fit); `auto` takes the largest
// count up to kAutoMaxBatchCap that still leaves the floor, after the auto context and hot cache
// were sized for one. docs/memory.md §the-plan.
#include <cstdint>
#include <optional>

#include "engine/planner/memory_plan.hpp"

namespace ds4::planner {

inline constexpr uint64_t kMaxBatchLimit = 64;   // the largest server.max_batch accepted
inline constexpr uint64_t kAutoMaxBatchCap = 8;  // the most `auto` chooses

// The largest N in 1..cap for which `in` with N live contexts has the verdict Fits; 1 when none
// does (the plan's verdict at 1 then says why). Throws what compute_plan throws.
uint64_t choose_max_batch(const PlanInput& in, uint64_t cap = kAutoMaxBatchCap);

// Sets in.live_contexts: `max_batch` when given, else choose_max_batch (marking kAutoMaxBatch in
// in.auto_terms).
void resolve_live_contexts(PlanInput& in, std::optional<uint64_t> max_batch);

}  // namespace ds4::planner
