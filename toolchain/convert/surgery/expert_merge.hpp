#pragma once
// The one place a surgery decodes and re-encodes weights (docs/surgery.md §hash-layers, T2):
// the experts of a hash-routed layer's cluster are averaged, weighted by their calibration load,
// and the result is encoded back to the source format (FP4 E2M1 + E8M0 per 32). Row by row: one
// row of each member is decoded at a time, so memory is a few rows whatever the expert size.
// The audit is the relative RMS error of the re-encoding against the exact float average.
#include <cstdint>
#include <string>
#include <vector>

#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert::surgery {

struct MergeAudit {
  uint32_t layer = 0, survivor = 0;
  std::string part;  // ".w1", ".w2" or ".w3"
  std::vector<uint32_t> members;
  double sum_err2 = 0, sum_ref2 = 0;
  double rel_rmse() const;
};

struct MergedPart {
  std::vector<std::byte> weight, scale;  // packed FP4 [out, in/2], E8M0 [out, in/32]
};

// `weights` / `scales` are the members' tensors of one part (w1, w2 or w3), all of one shape;
// `w` their weights (sum > 0). Throws ConvertError when a member is not packed FP4 with scales.
MergedPart merge_fp4_experts(const std::vector<const SourceTensor*>& weights,
                             const std::vector<const SourceTensor*>& scales, const std::vector<double>& w,
                             MergeAudit& audit);

}  // namespace ds4::convert::surgery
