#pragma once
// The hash-layer analysis (docs/surgery.md §hash-layers). For a calibration text and a target
// count K this measures, per hash layer, the load per expert and the share of routing
// assignments a naive cut and a most-loaded cut reassign, and builds the two repairs as plan
// sections (surgery_plan.hpp): T1, an index edit to the most similar kept expert (sketched,
// expert_sketch.hpp), and T2, clusters merged by load-weighted averaging (expert_merge.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "toolchain/convert/safetensors.hpp"
#include "toolchain/convert/surgery/expert_sketch.hpp"

namespace ds4::convert::surgery {

struct HashLayerReport {
  uint32_t layer = 0;
  std::vector<uint64_t> load;  // per source expert
  uint64_t assignments = 0;    // tokens x k
  double naive_reassigned = 0, by_load_reassigned = 0;
  std::vector<uint32_t> keep_by_load;  // ascending ids
  std::vector<uint32_t> t1_target;     // per source expert: its kept destination (itself if kept)
  std::vector<float> t1_cosine;        // the destination's cosine (1 if kept)
  uint64_t sketch_coordinates = 0, sketch_memory = 0;
};

// `tokens`: the calibration text's ids. Throws ConvertError on a checkpoint without hash layers
// or a token id outside tid2eid.
std::vector<HashLayerReport> hash_route_report(const Checkpoint& ck, const std::vector<int32_t>& tokens, uint32_t keep,
                                               const SketchOptions& sketch = {});

// A plan (TOML text) applying repair "naive", "t1" or "t2" to the hash layers; learned-router
// layers keep their first `keep` experts (a placeholder the caller should replace with a choice
// from router statistics; the text says so).
std::string repair_plan(const std::vector<HashLayerReport>& r, uint32_t n_layer, uint32_t keep,
                        const std::string& repair, const std::string& name);

}  // namespace ds4::convert::surgery
