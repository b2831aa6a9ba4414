#pragma once
// `auto` budgets: the parts of the memory plan that are policy, not facts — context, hot cache,
// reserve, floor and swap — sized from the model and the machine when the operator leaves them to
// `auto` (the default). Explicit values always win and are never adjusted. ds4ctl plan, the
// supervisor and the daemon all call resolve_budgets through plan_input_from_gguf, so they cannot
// disagree. The rule and the figures it gives: docs/memory.md §auto-budgets.
#include <cstdint>
#include <functional>
#include <optional>

namespace ds4::planner {

// What the operator chose; std::nullopt is `auto`. context_tokens = 0 means the model's trained
// context_length (an explicit choice, the configuration's long-standing meaning of 0).
struct BudgetChoice {
  std::optional<uint64_t> context_tokens;
  std::optional<uint64_t> hot_cache_bytes;
  std::optional<uint64_t> reserve_bytes;
  std::optional<uint64_t> floor_bytes;
  std::optional<uint64_t> swap_bytes;
  // Live contexts (server.max_batch). An explicit count sizes the auto context and hot cache for
  // that many KVs; `auto` sizes them for one and then takes what they leave (max_batch.hpp).
  std::optional<uint64_t> max_batch;
};

// The facts the rule reads: the machine and the model's fixed terms.
struct BudgetFacts {
  uint64_t mem_total_bytes = 0;
  uint64_t weights_bytes = 0;
  uint64_t sidecar_bytes = 0;
  uint64_t workspace_bytes = 0;
  uint64_t trained_context = 0;                // 0: unknown (figures typed in)
  std::function<uint64_t(uint64_t)> kv_bytes;  // KV bytes at a context (kv_cost(...).total)
};

// Which terms were chosen by the rule (for the report: "(auto)").
enum AutoTerm : unsigned {
  kAutoContext = 1u << 0,
  kAutoHotCache = 1u << 1,
  kAutoReserve = 1u << 2,
  kAutoFloor = 1u << 3,
  kAutoSwap = 1u << 4,
  kAutoMaxBatch = 1u << 5,
};

struct Budgets {
  uint64_t context_tokens = 0;
  uint64_t hot_cache_bytes = 0;
  uint64_t reserve_bytes = 0;
  uint64_t floor_bytes = 0;
  uint64_t swap_bytes = 0;
  unsigned auto_terms = 0;  // AutoTerm bits
};

inline constexpr uint64_t kAutoReferenceMemTotal = 112ull << 30;
inline constexpr uint64_t kAutoContextCap = 262144;
inline constexpr uint64_t kAutoContextMin = 4096;
inline constexpr uint64_t kAutoHotCacheCap = 12ull << 30;
inline constexpr uint64_t kAutoReserveFull = 4ull << 30, kAutoReserveMin = 256ull << 20;
inline constexpr uint64_t kAutoFloorFull = 4ull << 30, kAutoFloorMin = 128ull << 20;
inline constexpr uint64_t kAutoSwapFull = 16ull << 30, kAutoSwapMin = 256ull << 20;

// The largest context the auto rule would ever pick for a model (the KV is costed there first).
uint64_t auto_context_cap(uint64_t trained_context);

// Applies the rule above. Pure arithmetic; never throws.
Budgets resolve_budgets(const BudgetFacts& facts, const BudgetChoice& choice);

}  // namespace ds4::planner
