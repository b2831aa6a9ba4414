#pragma once
// `ds4ctl export-w4a16`: the official checkpoint in the W4A16 form vLLM serves (compressed-
// tensors), for users who outgrow one box:
//   * routed experts (FP4) -> INT4 symmetric, group 32 along the input, "pack-quantized":
//     <name>.weight_packed I32 [out, in/8] (eight 4-bit values per word, lowest first, stored
//     +8 as unsigned), <name>.weight_scale BF16 [out, in/32], <name>.weight_shape I64 [2].
//     The scale of each group is chosen by grid search: s = r * amax / 7 for
//     r in {6/7, 0.9, 0.95, 1.0, 1.05, 1.1}, keeping the lowest squared error;
//   * FP8 attention projections kept as they are, their E8M0 block scales written as the F32
//     "<name>.weight_scale" compressed-tensors expects (128x128 blocks);
//   * shared expert, compressor and indexer weights dequantized to BF16; everything else copied;
//   * config.json gains quantization_config; shards of at most `max_shard_bytes` (5 GB) plus
//     model.safetensors.index.json; tokenizer.json copied.
// The audit (DIR/w4a16.audit.json, .txt) gives the SNR per tensor against the exact source
// values. Streams tensor by tensor: each shard's header is laid out from the shapes first.
#include <cstdint>
#include <string>
#include <vector>

namespace ds4::convert {

struct W4a16Options {
  uint64_t max_shard_bytes = 5'000'000'000ull;
};

struct W4a16Tensor {
  std::string name, kind;  // kind: int4_group32 | fp8_block | bf16 | copy
  double snr_db = 0;       // signal-to-noise of the written values vs the source (inf: exact)
  uint64_t bytes = 0;
};

struct W4a16Result {
  std::vector<W4a16Tensor> tensors;
  size_t shards = 0;
  uint64_t bytes = 0;
  double expert_snr_db = 0;  // over all routed-expert values
};

W4a16Result export_w4a16(const std::string& src_dir, const std::string& out_dir, const W4a16Options& opt = {});

// One group of 32 (or fewer) values: the grid-searched scale and INT4 codes in [-8, 7].
float int4_group_quantize(const float* x, int n, int8_t* q);

}  // namespace ds4::convert
