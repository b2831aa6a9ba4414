#pragma once
// Every dimension and constant of the DS4 graph, read from GGUF metadata by the loader
// (model_loader.cpp) and cross-checked against the tensor shapes. Nothing in the forward pass
// uses a literal size: the same code runs the 43-layer 284B model and the 6-layer ds4-tiny
// conformance model.
#include <cstdint>
#include <vector>

namespace ds4::model {

struct ModelConfig {
  uint32_t n_layer = 0, n_embd = 0, n_vocab = 0;
  uint32_t n_head = 0, head_dim = 0, n_rot = 0, n_nope = 0;  // n_nope = head_dim - n_rot
  uint32_t q_lora_rank = 0, out_lora_rank = 0, n_out_group = 0;
  uint32_t n_expert = 0, n_expert_used = 0, n_ff = 0, n_hash_layer = 0;
  uint32_t n_swa = 0;
  uint32_t idx_heads = 0, idx_dim = 0, idx_top_k = 0;
  uint32_t n_hc = 0, sinkhorn_iters = 0;
  float rms_eps = 1e-6f, hc_eps = 1e-6f;
  float rope_base = 0, compress_rope_base = 0, rope_scale_factor = 0;
  float yarn_beta_fast = 0, yarn_beta_slow = 0;
  uint64_t rope_orig_ctx = 0;
  float expert_weight_scale = 0;
  uint64_t context_length = 0;
  std::vector<uint32_t> compress_ratio;  // per layer
  std::vector<float> swiglu_clamp;       // per layer

  uint32_t hc_dim() const { return n_hc * n_embd; }
  uint32_t hc_mix() const { return (2 + n_hc) * n_hc; }
  uint32_t q_dim() const { return n_head * head_dim; }
  uint32_t group_heads() const { return n_head / n_out_group; }
  uint32_t group_dim() const { return group_heads() * head_dim; }
};

}  // namespace ds4::model
