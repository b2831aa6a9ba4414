#pragma once
// The model forge: writes a DeepSeek V4 Flash GGUF with random weights, every tensor and
// deepseek4.* key of the real layout (ds4_layout.hpp), the q2 type recipe, and a small byte-level
// BPE vocabulary. Same preset and seed => byte-identical file. Presets:
//   tiny   the ds4-tiny dimensions (6 layers, n_embd 256, vocab 1024, 16 experts): a ~17 MB model
//          for unit tests.
//   bench  10 layers, n_embd 2048, 32 experts of FF 1536, vocab 2048: ~1.2 GB, and a decoded
//          token reads ~470 MiB of weights, so CPU decode is memory-bound.
// Routed-expert pools: the IQ2_XXS quantizer is a grid search (~40 us per element), far too slow
// to quantize millions of expert rows, so each routed-expert tensor draws and quantizes a pool of
// P rows (tiny 32, bench 16; expert_pool_rows) and tiles them: row r of the tensor is pool row
// (r + 131*(r/P)) % P. Every other tensor is drawn and quantized row by row in full.
// Weights follow the ds4-tiny recipe: N(0, gain/sqrt(fan_in)) projections (router gain 2, output
// gain 3), token_embd N(0, 0.5²), norms N(1, 0.1²) (attn_kv_a_norm N(1.5, 0.15²)), attn_sinks
// N(1, 1), HC scales U[0.3, 1], HC pre/post base N(0, 0.5²), comb base N(0, 1), compressor ape
// N(0, 0.5²), exp_probs_b N(0, 0.1²), tid2eid n_expert_used distinct random experts per token.
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

}  // namespace ds4::gguf::forge
