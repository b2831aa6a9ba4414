#pragma once
// The four invariants a converted DS4 Flash file must keep, checked on the written file against
// config.json (the field's list; none may move whatever the recipe):
//   routed_experts   every layer holds all n_routed_experts experts (256/256 for the release),
//                    each taken from its own source expert;
//   top_k            expert_used_count equals num_experts_per_tok (6);
//   all_layers       block_count equals num_hidden_layers and every layer has its tensors;
//   sparse_attention compress_ratios, the indexer top-k and the hash-layer count equal the
//                    config, and every ratio-4 layer has its indexer tensors;
// plus engine_layout: the file passes the engine's own catalogue check (check_ds4_layout).
#include <string>
#include <vector>

#include "toolchain/convert/convert_plan.hpp"
#include "toolchain/convert/converter.hpp"

namespace ds4::convert {

std::vector<Invariant> check_invariants(const std::string& gguf_path, const OfficialConfig& cfg,
                                        const ConvertPlan& plan);

}  // namespace ds4::convert
