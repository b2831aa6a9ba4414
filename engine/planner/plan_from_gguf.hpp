#pragma once
// Builds a PlanInput from GGUF files: the target model (file size, KV geometry and activation
// dimensions from its metadata and tensor shapes) and an optional drafter (MTP) GGUF, whose file
// size is the sidecar term and whose blocks each add a raw ring to the KV fixed cost. Only the
// header and tensor table are read; the weights are never touched, so planning an 81 GiB model
// costs a few megabytes of page cache. Everything not in the GGUF comes from the caller: MemTotal,
// and the budgets (context, hot cache, reserve, floor, swap, live contexts), each either a figure or `auto`
// (std::nullopt), resolved by auto_budget.hpp's rule against this model and MemTotal.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/planner/auto_budget.hpp"
#include "engine/planner/kv_geometry.hpp"
#include "engine/planner/memory_plan.hpp"
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::gguf {
class GgufFile;
}

namespace ds4::planner {

struct ModelFacts {
  std::string name;
  uint64_t file_bytes = 0;
  uint64_t trained_context = 0;  // <arch>.context_length, 0 when absent
  KvGeometry kv;
  ActivationDims dims;
};

// Reads the facts from an open target GGUF. Throws gguf::GgufError naming the key or tensor when
// a required field is missing or inconsistent (e.g. fewer compress ratios than layers).
ModelFacts read_model_facts(const gguf::GgufFile& f);
// Number of MTP blocks (distinct "mtp.N." prefixes holding an attn_kv tensor) in a drafter GGUF.
uint32_t count_drafter_blocks(const gguf::GgufFile& f);

struct GgufPlanRequest {
  std::string model_path;
  std::string drafter_path;               // empty: no drafter
  std::optional<uint64_t> sidecar_bytes;  // overrides the drafter file size
  BudgetChoice budgets;                   // unset terms are `auto`; context 0: trained
  uint32_t prefill_cap = kDefaultPrefillCap;
  std::optional<uint64_t> workspace_bytes;  // unset: workspace_estimate()
  uint64_t mem_total_bytes = 0;
};

// The plan's input with every `auto` budget resolved (PlanInput::swap_bytes, live_contexts and
// auto_terms included). Throws gguf::GgufError for an unreadable model, or when the context is 0 (trained)
// and the model has no context_length key.
PlanInput plan_input_from_gguf(const GgufPlanRequest& request);

}  // namespace ds4::planner
