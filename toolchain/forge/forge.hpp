#pragma once
// The model forge: writes a DeepSeek V4 Flash GGUF with random weights, every tensor and
// deepseek4.* key of the real layout (ds4_layout.hpp), the q2 type recipe, and a small byte-level
// BPE vocabulary. Same preset and seed => byte-identical file. The presets (tiny, bench), the
// routed-expert row pools and the weight distributions: docs/toolchain.md §the-model-forge.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_writer.hpp"

namespace ds4::gguf::forge {

struct ForgePreset {
  std::string name;
  Ds4Dims dims;
  uint64_t context_length = 1048576;
  uint32_t expert_pool_rows = 0;  // 0: quantize every routed-expert row; else pool size (see above)
};

std::vector<std::string> forge_preset_names();
// Throws std::invalid_argument for an unknown name.
ForgePreset forge_preset(std::string_view name);

struct ForgeSummary {
  uint64_t file_bytes = 0;
  uint64_t weight_bytes = 0;
  uint64_t decode_bytes_per_token = 0;  // weights a one-token decode reads (see ds4_layout.hpp)
  size_t n_tensors = 0;
};

// A writer holding the whole model; tensor data is generated while write() runs, one tensor at a
// time. `summary` (optional) receives the sizes.
GgufWriter forge_writer(const ForgePreset& preset, uint64_t seed, ForgeSummary* summary = nullptr);
// Forges and writes `path`.
ForgeSummary forge_model(const ForgePreset& preset, uint64_t seed, const std::string& path);

// The forged model's MTP drafter: a sidecar with every tensor of convert::mtp_catalogue for the
// preset's dims, the same distributions and q2 recipe, its own streams of the same seed, role
// "mtp" and bound to its base by `base_digest` (gguf::mtp_base_digest of the forged main file).
GgufWriter forge_drafter_writer(const ForgePreset& preset, uint64_t seed, const std::string& base_digest,
                                ForgeSummary* summary = nullptr);
// Forges the drafter of the main file at `main_path` (forged with the same preset) to `path`.
ForgeSummary forge_drafter(const ForgePreset& preset, uint64_t seed, const std::string& main_path,
                           const std::string& path);

}  // namespace ds4::gguf::forge
