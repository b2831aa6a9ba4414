#pragma once
// `ds4ctl export-w4a16`: the official checkpoint in the W4A16 form vLLM serves (compressed-
// tensors): routed experts as INT4 group-32 with grid-searched scales, FP8 attention kept, the
// rest BF16 or copied; the audit (DIR/w4a16.audit.json, .txt) gives the SNR per tensor. Streams
// tensor by tensor. What each tensor becomes and the packed layout:
// docs/toolchain.md §converting-the-official-checkpoint-toolchainconvert, §w4a16-layout.
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
