#pragma once
// Estimate of the scratch memory the engine needs beside weights and KV: the CUDA runtime's own
// context (driver, module images) plus the scratch of one prefill pass of `prefill_cap` tokens,
// which every live context borrows in turn (docs/memory.md §scratch). Per token that is what a
// pass holds per row, on the CPU or the device alike: the hyper-connection states, the attention's
// q latent, queries and head outputs, the compressors' and the indexer's inputs, the grouped
// output's low rank rows, the router logits, every routed and shared expert's gate, up and product
// rows and routed down outputs, and the int8 copies of the activations the matrix products read;
// one row of logits per decoded/verified position; the device attention's group of scores; the
// CUDA graphs' executables. The tests hold the device pass's scratch and the CPU's under it.
// memory.workspace can replace it.
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
  uint64_t out_groups = 8;  // grouped output projection: groups x rank
  uint64_t out_rank = 1024;
  uint64_t layers = 43;
};

inline constexpr uint64_t kCudaContextBytes = 512ull << 20;  // driver context and modules, typical
inline constexpr uint32_t kDefaultPrefillCap = 2048;         // ds4's default ubatch
inline constexpr uint32_t kLogitRows = 16;                   // decode + speculative verify rows
// The device attention's rows per launch group at most (docs/cuda.md §attention-rows): its
// scores (heads floats per row) and row lists (8 bytes per row) are workspace.
inline constexpr uint64_t kAttentionGroupSlots = 65536;
// Indexer rows scored per batched choice at most: their scores (4 bytes) and mask (1 byte).
inline constexpr uint64_t kIndexerGroupRows = 1u << 20;
// CUDA graphs (docs/cuda.md §graphs): the executables a pass keeps (cuda::PassGraph::kMaxShapes),
// the kernels a decode step runs per layer and in the embedding and head (ds4-tiny's: 305 for its
// 6 layers), and what the driver holds per kernel node of an executable (NVIDIA's CCCL
// developers' figure, about 10 KB; not measured here).
inline constexpr uint64_t kGraphShapes = 16;
inline constexpr uint64_t kGraphKernelsPerLayer = 50;
inline constexpr uint64_t kGraphHeadKernels = 8;
inline constexpr uint64_t kGraphNodeBytes = 10u << 10;

// An MTP drafter's step (docs/memory.md §scratch): at most this many rows at once (a catch-up of
// engine/model/mtp.cpp's kMaxCatchUp positions and the next token) through its one block, with
// the target's states it reads and their projections; lent per draft like a pass's scratch.
inline constexpr uint64_t kDrafterPassRows = 129;
inline constexpr uint64_t kDrafterStepKernels = 60;  // the block's layer, its input and its head

uint64_t activation_bytes_per_token(const ActivationDims& d);
// The scratch one draft step may hold (every drafter borrows the same one) and its graphs.
uint64_t drafter_workspace(const ActivationDims& d);
// The executables one pass scratch's graphs may hold: kGraphShapes of a short pass's kernels.
uint64_t graph_bytes(const ActivationDims& d);
uint64_t workspace_estimate(const ActivationDims& d, uint32_t prefill_cap);

}  // namespace ds4::planner
