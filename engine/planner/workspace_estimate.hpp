#pragma once
// Estimate of the scratch memory the engine needs beside weights and KV: the CUDA runtime's own
// context (driver, cuBLAS handles, module images) plus f32 activations for one prefill ubatch of
// `prefill_cap` tokens. Per token the big buffers are the hyper-connection streams (input and
// output), the attention query, output and latent, the q latent, indexer queries, router logits,
// and the routed + shared expert gate/up/product rows; one row of logits per decoded/verified
// position. It is an estimate, stated as one: the plan prints it as a separate term, and the
// configuration can replace it with a measured figure (memory.workspace).
#include <cstdint>

namespace ds4::planner {

struct ActivationDims {
  uint64_t embedding = 4096;
  uint64_t vocab = 129280;
  uint64_t heads = 64;
  uint64_t head_dim = 512;
  uint64_t q_lora = 1024;
  uint64_t hc_streams = 4;
  uint64_t experts = 256;
  uint64_t experts_used = 6;
  uint64_t experts_shared = 1;
  uint64_t expert_ff = 2048;
  uint64_t indexer_heads = 64;
  uint64_t indexer_dim = 128;
};

inline constexpr uint64_t kCudaContextBytes = 512ull << 20;  // runtime + cuBLAS, typical
inline constexpr uint32_t kDefaultPrefillCap = 2048;         // ds4's default ubatch
inline constexpr uint32_t kLogitRows = 16;                   // decode + speculative verify rows

uint64_t activation_bytes_per_token(const ActivationDims& d);
uint64_t workspace_estimate(const ActivationDims& d, uint32_t prefill_cap);

}  // namespace ds4::planner
