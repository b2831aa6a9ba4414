// The `auto` budget rule; stated in auto_budget.hpp.
#include "engine/planner/auto_budget.hpp"

#include <algorithm>

namespace ds4::planner {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// Whole MiB: figures an operator can read back and a swap file size the kernel takes as is.
uint64_t whole_mib(uint64_t v) { return v / kMiB * kMiB; }

// full × MemTotal / reference in whole MiB, exact in 128-bit so a 2 TiB box cannot overflow.
uint64_t scaled(uint64_t full, uint64_t mem_total, uint64_t min) {
  if (mem_total >= kAutoReferenceMemTotal) return full;
  const auto v = static_cast<uint64_t>(static_cast<unsigned __int128>(full) * mem_total / kAutoReferenceMemTotal);
  return std::max(whole_mib(v), min);
}

uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// The KV of every live context the operator asked for (saturating: a figure that large only has
// to compare as too big).
uint64_t kv_at(const BudgetFacts& f, const BudgetChoice& c, uint64_t ctx) {
  const uint64_t one = f.kv_bytes ? f.kv_bytes(ctx) : 0;
  const uint64_t live = std::max<uint64_t>(1, c.max_batch.value_or(1));
  return one > UINT64_MAX / live ? UINT64_MAX : one * live;
}

}  // namespace

uint64_t auto_context_cap(uint64_t trained_context) {
  return trained_context != 0 ? std::min(trained_context, kAutoContextCap) : kAutoContextCap;
}

Budgets resolve_budgets(const BudgetFacts& f, const BudgetChoice& c) {
  Budgets b;
  const uint64_t mem = f.mem_total_bytes;
  auto pick = [&](const std::optional<uint64_t>& chosen, uint64_t automatic, AutoTerm bit) {
    if (chosen) return *chosen;
    b.auto_terms |= bit;
    return automatic;
  };
  b.reserve_bytes = pick(c.reserve_bytes, scaled(kAutoReserveFull, mem, kAutoReserveMin), kAutoReserve);
  b.floor_bytes = pick(c.floor_bytes, scaled(kAutoFloorFull, mem, kAutoFloorMin), kAutoFloor);
  b.swap_bytes = pick(c.swap_bytes, scaled(kAutoSwapFull, mem, kAutoSwapMin), kAutoSwap);

  uint64_t free = minus(mem, f.weights_bytes);
  free = minus(free, f.sidecar_bytes);
  free = minus(free, f.workspace_bytes);
  free = minus(free, b.reserve_bytes);
  free = minus(free, b.floor_bytes);
  if (c.hot_cache_bytes) free = minus(free, *c.hot_cache_bytes);

  if (c.context_tokens) {
    b.context_tokens = *c.context_tokens == 0 ? f.trained_context : *c.context_tokens;
  } else {
    b.auto_terms |= kAutoContext;
    const uint64_t cap = auto_context_cap(f.trained_context);
    const uint64_t least = std::min(cap, kAutoContextMin);
    uint64_t ctx = cap;
    // Halving keeps the context a power of two when the cap is one (the shipping 262144).
    while (ctx > least && kv_at(f, c, ctx) > free / 2) ctx = std::max(least, ctx / 2);
    b.context_tokens = ctx;
  }

  if (c.hot_cache_bytes) {
    b.hot_cache_bytes = *c.hot_cache_bytes;
  } else {
    b.auto_terms |= kAutoHotCache;
    const uint64_t left = minus(free, kv_at(f, c, b.context_tokens));
    b.hot_cache_bytes = std::min(kAutoHotCacheCap, whole_mib(left / 4 * 3));
  }
  return b;
}

}  // namespace ds4::planner
