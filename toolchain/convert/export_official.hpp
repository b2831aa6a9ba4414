#pragma once
// The fixture generator: writes a DS4 GGUF's weights as an official-format checkpoint (the
// layout convert reads), so conversions can be tested end to end on tiny models and models
// trained here (the tiny agent model) can go through the same path as the release.
//   * routed experts -> FP4 E2M1 packed I8 + E8M0 scales per 32 (one tensor pair per expert);
//     MXFP4 experts are repacked without loss, other types re-encoded;
//   * attention projections and shared expert -> FP8 E4M3 + E8M0 scales per 128x128 block;
//   * F16 tensors stay F16 (exact; the release stores BF16 there, read the same way), other
//     2-D tensors -> BF16, 1-D tensors -> F32, tid2eid -> I64;
//   * config.json, tokenizer.json, model.safetensors.index.json; tensors spread over `shards`
//     shard files of about equal size (model-0000N-of-0000M.safetensors).
// Values are the dequantized GGUF weights, re-encoded (lossy where the formats differ).
#include <cstdint>
#include <string>

namespace ds4::convert {

struct ExportOfficialOptions {
  unsigned shards = 3;
  // Also write an MTP / drafter block ("mtp.0.*", mtp_sidecar.hpp) with random weights drawn
  // from `mtp_seed` (a GGUF carries no MTP block to export).
  bool mtp = false;
  uint64_t mtp_seed = 1;
};

struct ExportOfficialSummary {
  size_t tensors = 0, shards = 0;
  uint64_t bytes = 0;
};

// Throws ConvertError / GgufError on bad input or I/O failure. `dir` is created if needed.
ExportOfficialSummary export_official(const std::string& gguf_path, const std::string& dir,
                                      const ExportOfficialOptions& opt = {});

}  // namespace ds4::convert
