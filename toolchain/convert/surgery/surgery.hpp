#pragma once
// ds4::convert::surgery: structural edits of an official-format checkpoint. A plan
// (surgery_plan.hpp) removes routed experts per layer and whole layers; the result is a new
// checkpoint folder, written contiguously and then checked as a serving loader would
// (load_check.hpp). The only decode/re-encode is a merge in a hash layer (expert_merge.hpp). With
// `shard` set, only that source shard (1-based) is processed and the check is the partial one.
// What is copied, cut and rewritten, and where each tensor goes:
// docs/surgery.md §structure-not-numbers, §output, §plan.
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
