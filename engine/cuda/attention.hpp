#pragma once
// Sink attention of one query token on the device in the Fast order (kernels/attention.cuh),
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

// As attention_fast over n_fixed + *extra rows, extra being one int32 in device memory that a
// kernel queued before wrote (the indexer's chosen count): the kernels read it, so the host does
// not wait for it (docs/cuda.md §host-round-trips). rows and scores are sized for n_max rows, the
// most n_fixed + *extra can be; a count past n_max is the caller's error and is not checked.
void attention_fast_counted(DeviceSpan q, DeviceSpan rows, int32_t n_fixed, DeviceSpan extra, int32_t n_max,
                            int32_t n_head, int32_t d, DeviceSpan sinks, DeviceSpan scores, DeviceSpan out);

}  // namespace ds4::cuda
