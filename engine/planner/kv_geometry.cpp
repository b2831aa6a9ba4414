// KV cache cost arithmetic; the rules are stated in kv_geometry.hpp.
#include "engine/planner/kv_geometry.hpp"

#include <algorithm>

namespace ds4::planner {
namespace {
constexpr uint64_t kF32 = 4;
constexpr uint64_t kSpareRows = 2;  // ds4 allocates ctx/ratio + 2 rows per compressed buffer
}  // namespace

KvGeometry KvGeometry::ds4_flash() {
  KvGeometry g;
  for (uint32_t i = 0; i < 43; ++i) {
    KvLayer l;
    if (i >= 2) l.ratio = (i % 2 == 0) ? 4 : 128;
    l.overlap = l.ratio == 4 ? 2 : 1;
    l.indexer = l.ratio == 4;
    g.layers.push_back(l);
  }
  return g;
}

uint32_t raw_ring_rows(uint32_t window, uint32_t prefill_cap, uint64_t context) {
  uint64_t rows = std::min<uint64_t>(uint64_t{window} + prefill_cap, context);
  rows = (rows + 255) / 256 * 256;
  rows = std::min<uint64_t>(rows, 8192);
  return static_cast<uint32_t>(std::max<uint64_t>(rows, window));
}

KvCost kv_cost(const KvGeometry& g, uint64_t context, uint32_t prefill_cap) {
  KvCost c;
  c.raw_cap = raw_ring_rows(g.window, prefill_cap, context);
  const uint64_t latent_row = uint64_t{g.latent_dim} * kF32;
  const uint64_t index_row = uint64_t{g.indexer_dim} * kF32;
  auto per_token = [](uint64_t row, uint32_t ratio) { return (row + ratio - 1) / ratio; };
  for (const KvLayer& l : g.layers) {
    c.raw_ring_bytes += uint64_t{c.raw_cap} * latent_row;
    if (l.ratio == 0) continue;
    c.bytes_per_token += per_token(latent_row, l.ratio);
    c.spare_row_bytes += kSpareRows * latent_row;
    // attention compressor: kv and score, each [overlap*ratio][overlap*latent_dim]
    c.state_bytes += 2ull * l.overlap * l.ratio * l.overlap * latent_row;
    if (l.indexer) {
      c.bytes_per_token += per_token(index_row, l.ratio);
      c.spare_row_bytes += kSpareRows * index_row;
      c.state_bytes += 2ull * l.overlap * l.ratio * l.overlap * index_row;
    }
  }
  c.raw_ring_bytes += uint64_t{g.drafter_layers} * c.raw_cap * latent_row;
  if (g.drafter_layers) c.raw_ring_bytes += (uint64_t{g.window} + KvGeometry::kDrafterRollback) * g.drafter_state_row;
  return c;
}

}  // namespace ds4::planner
