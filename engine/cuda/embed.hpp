#pragma once
// Token embedding on the device (kernels/embed.cuh), bit-identical to the CPU's embed_rows
// (engine/model/forward.cpp): each token's f16 row as f32 in all n_hc streams of the residual.
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

// tokens: T device int32 ids; table: n_vocab x n_embd f16; H: T x n_hc x n_embd floats; error:
// a device int32 the kernel sets to 1 when an id is outside [0, n_vocab) (that token's rows are
// zeroed; nothing out of bounds is read). The ids live on the device, so the launcher cannot see
// them: the host validates ids before uploading them (as the CPU's embed_rows does) and
// embed_error reads the word. Throws std::invalid_argument when a buffer is too small.
// Asynchronous.
void embed(DeviceSpan tokens, int64_t T, DeviceSpan table, int64_t n_vocab, int64_t n_embd, int64_t n_hc, DeviceSpan H,
           DeviceSpan error);

// Waits for the device, reads the error word and clears it; throws std::out_of_range when set.
void check_embed_error(DeviceSpan error);

}  // namespace ds4::cuda
