#pragma once
// ds4::convert::surgery: structural edits of an official-format checkpoint (docs/surgery.md).
// A plan (surgery_plan.hpp) removes routed experts per layer and whole layers; the result is a
// new checkpoint folder: kept tensors copied byte for byte from the mapped source, the routing
// tensors cut to the kept rows (gate weight rows and bias entries: row copies, not arithmetic;
// tid2eid: expert ids rewritten), layers renumbered, config.json rewritten (n_routed_experts,
// num_hidden_layers, num_hash_layers, compress_ratios) and labelled with the plan's name, a new
// index, shards written contiguously and then checked as a serving loader would
// (load_check.hpp). Attention, shared experts, norms, embeddings and the head are never touched.
// The only decode/re-encode is a merge in a hash layer (expert_merge.hpp).
//
// Shards: each output tensor goes to the shard its source came from (a merged expert: its
// survivor's), in source order; shards left empty are not written and the rest renumbered.
// With `shard` set, only that source shard (1-based, as in model-0000N-of-0000M) is processed,
// to a folder holding that one shard, the config and an index of it; the check is then the
// partial one (the field's rule: try each step on one shard before the whole model).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "toolchain/convert/surgery/expert_merge.hpp"
#include "toolchain/convert/surgery/surgery_plan.hpp"

namespace ds4::convert::surgery {

struct SurgeryOptions {
  std::string source_dir, output_dir, plan_path;
  std::optional<size_t> shard;  // 1-based
};

struct SurgeryResult {
  Plan plan;  // resolved
  size_t tensors_in = 0, tensors_out = 0, tensors_removed = 0, tensors_edited = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  std::vector<std::string> shards;            // output shard files
  std::map<std::string, std::string> copied;  // output name -> source name, bytes identical
  std::vector<MergeAudit> merges;
};

// Throws ConvertError (file, tensor, reason) on a bad plan, a source it does not fit, or an
// output that fails the load check (the output folder is then left for inspection).
SurgeryResult run_surgery(const SurgeryOptions& options);

}  // namespace ds4::convert::surgery
