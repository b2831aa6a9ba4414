#pragma once
// The shape of a DS4-family model's attention state, and what it costs in bytes for a context:
// a part per token and a fixed part (raw rings, compressor states, spare rows), as the capacity
// plan states it. The geometry is read from the GGUF metadata and tensor shapes, not assumed, so
// the tiny test model and the 284B model go through the same arithmetic. The rules (ds4.c
// ds4_context_memory_estimate): docs/model.md §kv-cache.
#include <cstdint>
#include <vector>

namespace ds4::planner {

struct KvLayer {
  uint32_t ratio = 0;    // 0: raw window only
  uint32_t overlap = 1;  // compressor overlap factor ("coff"): 2 for ratio 4 in DS4 Flash
  bool indexer = false;  // keeps indexer rows + index compressor state
};

struct KvGeometry {
  std::vector<KvLayer> layers;
  uint32_t latent_dim = 512;    // width of a raw/compressed latent row (attention.key_length)
  uint32_t indexer_dim = 128;   // width of an indexer row (attention.indexer.key_length)
  uint32_t window = 128;        // logical raw window (attention.sliding_window)
  uint32_t drafter_layers = 0;  // MTP blocks: one raw ring each, no compressor
  // With a drafter the target keeps the final HC state (this many bytes: n_hc x n_embd floats)
  // of its last window + kDrafterRollback positions, which the block reads (engine/model/mtp.hpp).
  uint64_t drafter_state_row = 0;
  static constexpr uint32_t kDrafterRollback = 64;

  // DeepSeek V4 Flash as shipped: 43 layers, ratios 0,0,4,128,4,128,...,4.
  static KvGeometry ds4_flash();
};

struct KvCost {
  uint32_t raw_cap = 0;          // rows per raw ring (GPU rule)
  uint64_t bytes_per_token = 0;  // compressed + indexer rows per context token, all layers
  uint64_t raw_ring_bytes = 0;   // fixed: raw rings of every layer (and drafter), the drafter's states
  uint64_t state_bytes = 0;      // fixed: compressor + index compressor states
  uint64_t spare_row_bytes = 0;  // fixed: the 2 extra rows per compressed/indexer buffer
  uint64_t fixed_bytes() const { return raw_ring_bytes + state_bytes + spare_row_bytes; }
  uint64_t total(uint64_t context) const { return bytes_per_token * context + fixed_bytes(); }
};

// ds4's GPU raw ring size: min(align_up(min(window + prefill_cap, ctx), 256), 8192), at least
// the window.
uint32_t raw_ring_rows(uint32_t window, uint32_t prefill_cap, uint64_t context);

// Bytes per token is rounded up per layer when a row does not divide evenly by the ratio, so the
// plan never under-counts.
KvCost kv_cost(const KvGeometry& g, uint64_t context, uint32_t prefill_cap);

}  // namespace ds4::planner
