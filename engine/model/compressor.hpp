#pragma once
// The KV compressor of ratio-4 and ratio-128 layers (and the indexer's parallel ratio-4
// compressor). Every token stores its projected kv row and its score row (gate projection +
// learned positional bias ape[pos % ratio]) into the rolling window state; when the window
// completes ((pos + 1) % ratio == 0) the window is pooled per channel with a softmax over the
// scores and one compressed row is emitted. Ratio 4 windows overlap: the first half of the
// channels pools the previous window's 4 tokens, the second half the current window's.
// The emitted row is then RMS-normalised, RoPE'd at the window's first position, passed
// through the KV format simulation (FP8 for attention rows, Hadamard + FP4 for indexer rows)
// and rounded to f16, exactly as the reference stores it.
#include <cstdint>

#include "engine/model/kv_state.hpp"
#include "engine/model/linear.hpp"
#include "engine/model/rope.hpp"

namespace ds4::model {

enum class CompressedRowKind { Attention, Indexer };

// Stores one token's kv row and score row (+ ape) into the state. `ape` is the F16 [width,
// ratio] tensor data. Returns true when this token completes a window.
bool compressor_store(CompressorState& st, const float* kv, const float* score, const uint16_t* ape, uint32_t pos);

// Pools the completed window into `pooled` (head_dim values) and, for ratio 4, rolls the
// current window into the previous one. ds4's order in both modes; exact picks glibc's exp, else
// the Fast order's (docs/arithmetic.md §compressor-pooling).
void compressor_pool(CompressorState& st, bool exact, float* pooled);

// Ratio 4 only: the current window becomes the previous one (rows 4..7 -> 0..3). Called by
// compressor_pool after pooling.
void compressor_roll(CompressorState& st);

// Whether compressor_rebuild can reach the state after `n` tokens: the history holds the
// positions from the start of the windows still readable at n, or from base_pos.
bool compressor_can_rebuild(const CompressorState& st, const CompressorHistory& hist, uint64_t base_pos, uint64_t n);

// Rebuilds the state as it was after `n` tokens (rollback) by replaying recorded inputs, from
// the start of the previous (ratio 4) or current (ratio 128) window, or else from `base` (the
// state at base_pos). Throws std::out_of_range if neither is possible.
void compressor_rebuild(CompressorState& st, const CompressorHistory& hist, const CompressorState& base,
                        uint64_t base_pos, const uint16_t* ape, uint64_t n);

// Turns a pooled row into the stored compressed row (in place): RMSNorm and RoPE of ex's mode.
void compressed_row_finish(const Exec& ex, float* row, uint32_t head_dim, const float* norm_w, float eps,
                           const RopeParams& rope, uint32_t comp_pos, CompressedRowKind kind);

}  // namespace ds4::model
