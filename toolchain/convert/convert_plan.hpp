#pragma once
// The conversion plan: every target tensor of the DS4 catalogue bound to its source tensors
// (and their scales) in the checkpoint, with the recipe's type, checked completely before the
// first output byte exists. make_plan() rejects, naming file and tensor:
//   * a recipe the engine cannot load (check_recipe);
//   * a missing source tensor or scale, a wrong dtype, a shape that does not match config.json;
//   * a source tensor that lands in no target and has no reason to be skipped.
// Each source tensor is consumed by exactly one target, or carries a reason (MTP tensors go to
// the sidecar plan).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "toolchain/convert/official_config.hpp"
#include "toolchain/convert/recipe.hpp"
#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert {

enum class SourceKind { Float, Fp8, Fp4Experts, Ids };
std::string_view source_kind_name(SourceKind k);

struct TargetPlan {
  gguf::TensorRule rule;  // GGUF name, dims, family, layer
  quant::Type type = quant::Type::F32;
  SourceKind kind = SourceKind::Float;
  std::vector<const SourceTensor*> weights;  // one, or one per expert (expert order)
  std::vector<const SourceTensor*> scales;   // parallel to weights (Fp8, Fp4Experts)

  uint64_t ne0() const { return rule.dims[0]; }
  uint64_t rows() const;  // all rows of the GGUF tensor (experts stacked)
  uint64_t rows_per_source() const { return rows() / weights.size(); }
  uint64_t out_bytes() const;
  uint64_t source_bytes() const;
};

struct SkippedSource {
  std::string name, reason;
};

struct ConvertPlan {
  OfficialConfig config;
  std::vector<TargetPlan> targets;      // main GGUF, catalogue order
  std::vector<TargetPlan> mtp_targets;  // sidecar GGUF (may be empty)
  std::vector<SkippedSource> skipped;   // source tensors with no target, and why
  std::string source_fingerprint;       // 16 hex digits, see fingerprint_checkpoint
  size_t source_tensors = 0;            // tensors in the checkpoint
  size_t consumed = 0;                  // of those, read by exactly one target (weights and scales)
};

ConvertPlan make_plan(const Checkpoint& ck, const OfficialConfig& cfg, const Recipe& recipe);

// A revision fingerprint of the checkpoint: XXH3-64 over config.json, every tensor's name,
// dtype and shape, and three 256-byte samples of its data (start, middle, end). Cheap (it reads
// a few MB of a 150 GB checkpoint) and changes with any re-release of the weights.
std::string fingerprint_checkpoint(const Checkpoint& ck, const OfficialConfig& cfg);

}  // namespace ds4::convert
