// Workspace estimate; see workspace_estimate.hpp for what is counted and why.
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::planner {

uint64_t activation_bytes_per_token(const ActivationDims& d) {
  const uint64_t q = d.heads * d.head_dim, experts = d.experts_used + d.experts_shared;
  const uint64_t floats = 4 * d.hc_streams * d.embedding           // HC state in, mid, out, and HC pre's copy
                          + 5 * d.embedding                        // x, xn, attention out, shared and FFN out
                          + 2 * d.q_lora + 2 * q                   // q latent and its norm, q, heads' outputs
                          + 2 * d.head_dim                         // kv row before and after its norm
                          + 2 * d.head_dim                         // its raw row's pass copy, RoPE tables, slots
                          + 4 * d.head_dim + 4 * d.indexer_dim     // both compressors' kv and gate (two windows)
                          + d.indexer_heads * (d.indexer_dim + 1)  // indexer queries and head weights
                          + d.out_groups * d.out_rank              // grouped output's low rank rows
                          + d.experts                              // router logits
                          + 3 * experts * d.expert_ff              // gate, up, product
                          + d.experts_used * d.embedding           // each routed expert's down output
                          + 2 * d.experts_used;                    // the pairs grouped by expert
  // int8 copies the products read (Q8_0 1.0625, Q8_K 1.14 bytes per value; 1.25 counted): the
  // heads' outputs, the experts' products, the HC pre input.
  const uint64_t quantized = (q + experts * d.expert_ff + d.hc_streams * d.embedding) * 5 / 4;
  return floats * 4 + quantized;
}

uint64_t graph_bytes(const ActivationDims& d) {
  return kGraphShapes * (kGraphKernelsPerLayer * d.layers + kGraphHeadKernels) * kGraphNodeBytes;
}

uint64_t drafter_workspace(const ActivationDims& d) {
  // Per row beyond the block's layer: the target's state, its norm and projection, the embedding
  // row, the block's input, middle and output (n_hc x n_embd floats each); the embedding's norm
  // and projection (n_embd each).
  const uint64_t own_floats = (7 * d.hc_streams + 2) * d.embedding;
  return kDrafterPassRows * (activation_bytes_per_token(d) + own_floats * 4) +
         kGraphShapes * kDrafterStepKernels * kGraphNodeBytes;
}

uint64_t workspace_estimate(const ActivationDims& d, uint32_t prefill_cap) {
  const uint64_t attention_group = kAttentionGroupSlots * (d.heads * 4 + 8)  // scores and row addresses
                                   + kIndexerGroupRows * 5;                  // the indexer's scores, mask
  return kCudaContextBytes + activation_bytes_per_token(d) * prefill_cap + uint64_t{kLogitRows} * d.vocab * 4 +
         attention_group + graph_bytes(d);
}

}  // namespace ds4::planner
