// Workspace estimate; see workspace_estimate.hpp for what is counted and why.
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::planner {

uint64_t activation_bytes_per_token(const ActivationDims& d) {
  const uint64_t floats = 2 * d.hc_streams * d.embedding                            // HC state in + out
                          + 3 * d.heads * d.head_dim                                // q, attention out, grouped out
                          + d.head_dim + d.q_lora                                   // latent row, q latent
                          + d.indexer_heads * d.indexer_dim                         // indexer queries
                          + d.experts                                               // router logits
                          + 3 * (d.experts_used + d.experts_shared) * d.expert_ff;  // gate, up, act
  return floats * 4;
}

uint64_t workspace_estimate(const ActivationDims& d, uint32_t prefill_cap) {
  return kCudaContextBytes + activation_bytes_per_token(d) * prefill_cap + uint64_t{kLogitRows} * d.vocab * 4;
}

}  // namespace ds4::planner
