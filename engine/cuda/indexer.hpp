#pragma once
// The lightning indexer's selection on the device (kernels/indexer.cuh), bit-identical to the
// CPU's engine/model/indexer.cpp indexer_select in Fast mode, plus what attention needs from it:
// the addresses of the visible compressed rows (the sink attention kernel's row list). The query
// heads are made ready by rope (RoPE) and kv_format_rows (Hadamard + FP4, no f16 rounding), as
// forward.cpp does on the CPU; the head weights are scaled here.
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/cuda/indexer_choice.hpp"

namespace ds4::cuda {

// q: n_head x dim (ready; n_head at most 256), w: n_head weights before the scaling (wscale: forward.cpp's
// 1 / sqrt(float(dim * n_head))); index_rows: n indexer rows of dim floats. When n > top_k,
// scores them (scores: n floats of scratch) and sets mask (n bytes) to the CPU's allowed rows;
// otherwise sets every row. Then writes the allowed rows' addresses comp_rows + c * comp_dim
// (the attention compressed store, n rows or more) in row order to `visible` from entry
// visible_offset on (the entries before are the raw window's), and their number to count (one
// int32: top_k whenever n > top_k and the scores are finite). Throws std::invalid_argument on bad
// shapes or buffers too small. Asynchronous.
void indexer_select(DeviceSpan q, DeviceSpan w, int32_t n_head, int32_t dim, float wscale, DeviceSpan index_rows,
                    int32_t n, int32_t top_k, DeviceSpan scores, DeviceSpan mask, DeviceSpan comp_rows,
                    int32_t comp_dim, DeviceSpan visible, int32_t visible_offset, DeviceSpan count);

// indexer_select for R query rows at once, each with more indexer rows than top_k
// (docs/cuda.md §attention-rows): choices is a device array of R IndexerChoice entries whose
// `first` run 0, n_0, n_0 + n_1, ... up to total (the sum of their n); scores (total floats) and
// mask (total bytes) are scratch. Each row's chosen rows go to its `out`, their number to its
// `count`, bit-identical to indexer_select on that row. The entries' addresses are the caller's.
// Throws std::invalid_argument on bad shapes or scratch too small. Asynchronous (three launches).
void indexer_select_rows(DeviceSpan choices, int32_t R, int64_t total, int32_t n_head, int32_t dim, float wscale,
                         int32_t top_k, int32_t comp_dim, DeviceSpan scores, DeviceSpan mask);

// Every one of n compressed rows visible (ratio-128 layers, or n <= top_k without the mask):
// visible[visible_offset + c] = comp_rows + c * comp_dim, and count = n. Asynchronous.
void visible_rows_all(DeviceSpan comp_rows, int32_t n, int32_t comp_dim, DeviceSpan visible, int32_t visible_offset,
                      DeviceSpan count);

}  // namespace ds4::cuda
