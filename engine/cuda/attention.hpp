#pragma once
// Sink attention of query tokens on the device in the Fast order (kernels/attention.cuh),
// bit-identical to the CPU's engine/model/attention_fast.cpp (docs/arithmetic.md §attention).
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

// q: n_head x d floats. rows: n device addresses (uint64_t), in visible order (the raw window
// oldest first, then the allowed compressed rows), each of d floats and both key and value.
// sinks: n_head floats. scores: scratch of at least n x n_head floats. out: n_head x d floats.
// d at most 1024. Throws std::invalid_argument on bad shapes or buffers too small. Asynchronous
// (two launches on the same stream).
void attention_fast(DeviceSpan q, DeviceSpan rows, int32_t n, int32_t n_head, int32_t d, DeviceSpan sinks,
                    DeviceSpan scores, DeviceSpan out);

// T queries in one launch per pass (docs/cuda.md §attention-rows). q and out: T x n_head x d.
// rows: a device array of row addresses; first: T + 1 ascending int32 in device memory, query t's
// entries being first[t] .. first[t + 1] of rows; n_fixed (T int32) and extra (T int32, or empty:
// none) in device memory: query t sees the first n_fixed[t] + extra[t] of its entries (never more
// than it has), extra being what a kernel queued before wrote (the indexer's chosen counts), so the
// host never waits for it. slots = first[T] - first[0], which the host knows; scores: at least
// slots x n_head floats. Throws std::invalid_argument on bad shapes or buffers too small (the
// offsets themselves are the caller's). Asynchronous (two launches).
struct AttentionRows {
  DeviceSpan rows, first, n_fixed, extra;
  int32_t T = 0, slots = 0;
};
void attention_fast_rows(DeviceSpan q, const AttentionRows& table, int32_t n_head, int32_t d, DeviceSpan sinks,
                         DeviceSpan scores, DeviceSpan out);

}  // namespace ds4::cuda
