#pragma once
// One query row's entry in a batched indexer choice (kernels/indexer.cuh, the `_rows` kernels):
// device addresses and counts the host knows from positions, uploaded as an array (plain data,
// the same layout for the host compiler and nvcc).
#include <cstdint>

namespace ds4::cuda {

struct IndexerChoice {
  uint64_t q = 0;           // the row's ready query heads, n_head x dim floats
  uint64_t w = 0;           // its head weights, n_head floats (before wscale)
  uint64_t index_rows = 0;  // its sequence's indexer rows, n x dim floats
  uint64_t comp_rows = 0;   // its sequence's compressed attention rows, comp_dim floats apart
  uint64_t out = 0;         // where the chosen rows' addresses go, in row order (top_k at most)
  uint64_t count = 0;       // one int32: how many were written
  int32_t n = 0;            // indexer rows the row sees (more than top_k)
  int32_t first = 0;        // its scores' and mask's offset in the launch's arrays
};

}  // namespace ds4::cuda
