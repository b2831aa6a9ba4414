#pragma once
// The checks a serving loader applies to an official-format checkpoint before it maps a byte,
// run on every surgery output (docs/surgery.md §load-check):
//   * each shard's tensors tile its data section exactly: the first begins at 0, each next one
//     where the previous ends, the last at the end of the file. vLLM's safetensors loader rejects
//     a gap ("InvalidOffset"); the error here names the shard, the tensor and the gap;
//   * the routing tensors agree with config.json: ffn.gate.weight has n_routed_experts rows,
//     ffn.gate.bias n_routed_experts entries, tid2eid (hash layers only) is [vocab,
//     num_experts_per_tok] with every id below n_routed_experts; no expert id and no layer number
//     past the config's counts;
//   * unless `partial` (a --shard trial holds one shard): every layer has its gate and all
//     n_routed_experts experts (w1, w2, w3), and every hash layer its tid2eid.
#include <string>

namespace ds4::convert::surgery {

// Throws ConvertError naming the file and tensor on the first problem.
void check_loadable(const std::string& dir, bool partial = false);

// The contiguity check alone, for one shard file (used by check_loadable and the tests).
void check_contiguous(const std::string& shard_path);

}  // namespace ds4::convert::surgery
