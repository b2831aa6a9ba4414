#pragma once
// A surgery plan (PLAN.toml): which routed experts and layers an official-format checkpoint
// loses. The plan only names structure: the format is in docs/surgery.md §plan, and why anything
// needing arithmetic on packed FP8/FP4 bytes is refused in docs/surgery.md §structure-not-numbers
// (the one exception: merging experts of a hash-routed layer, docs/surgery.md §hash-layers).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ds4::convert::surgery {

struct LayerPlan {
  std::vector<uint32_t> keep;  // source expert ids, ascending, the survivors' new ids follow this order
  std::vector<uint32_t> drop;  // as written (resolve_plan turns it into keep)
  // Hash layers: removed source expert -> kept source expert (after merges: cluster representative).
  std::map<uint32_t, uint32_t> remap;
  // Hash layers (T2): each cluster's members, its first member the representative (which must be
  // kept); merged weights = sum(w_i * expert_i) / sum(w_i) over the members.
  std::vector<std::vector<uint32_t>> merge;
  std::vector<double> merge_weights;  // per source expert; empty: equal weights
};

struct Plan {
  std::string name;
  std::string path;                  // the file, for messages
  std::optional<uint32_t> n_expert;  // new n_routed_experts; nullopt: unchanged
  std::vector<uint32_t> drop_layers;
  std::map<uint32_t, LayerPlan> layers;  // by source layer number
};

// Reads and checks the file's syntax (unknown keys, keys that would need arithmetic outside the
// hash-layer exception, duplicate or negative ids). Throws ConvertError naming file and key.
Plan read_plan(const std::string& path);

// The shape a plan is checked against: from the source config.json.
struct SourceShape {
  uint32_t n_layer = 0, n_expert = 0, n_hash_layer = 0, n_expert_used = 0;
};

// The plan made complete for a source: every kept layer gets a keep list (all experts when the
// count is unchanged and the plan does not name it), hash layers get their remap (a removed
// expert neither remapped nor merged goes naively: the i-th removed one to keep[i mod K]).
// Throws ConvertError on any inconsistency: an expert id past the source count, a layer that
// would not end with n_routed_experts, a remap to a removed expert, a merge or remap outside a
// hash layer.
Plan resolve_plan(const Plan& p, const SourceShape& s);

}  // namespace ds4::convert::surgery
