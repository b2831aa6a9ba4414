#pragma once
// The KV-format simulations of stored rows on the device (kernels/kv_format.cuh), bit-identical
// to the CPU's engine/model/kv_format.hpp plus the f16 rounding of stored rows: the raw window
// row (forward.cpp: fp8_kv_row_inplace then round_f16 into st.push_raw_slot()), the format step of
// compressed_row_finish, and the indexer query heads' Hadamard + FP4.
#include <cstdint>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

enum class KvFormat : int32_t {
  Fp8 = 0,          // FP8 E4M3 on the first dim - n_rot values (a multiple of 64), blocks of 64
  Fp4Hadamard = 1,  // dim 128: Hadamard rotation, then FP4 E2M1 in blocks of 32
};

// x: rows x dim floats. Row t, formatted (then rounded to f16 when round_f16), goes to the
// address dst[t] (a device array of `rows` uint64_t row addresses: raw ring slots, compressed
// store rows) or, with dst empty (DeviceSpan{}), back into x. dim at most 1024. Throws std::invalid_argument on
// bad shapes or buffers too small. Asynchronous.
void kv_format_rows(DeviceSpan x, int32_t rows, int32_t dim, int32_t n_rot, KvFormat fmt, bool round_f16,
                    DeviceSpan dst);

// The raw KV rows of T tokens after RoPE: FP8 of the non-RoPE part, f16 rounding, each into its
// ring slot slots[t] (the addresses st.push_raw_slot() gives in token order). kv is left as is.
inline void kv_raw_store(DeviceSpan kv, int32_t T, int32_t head_dim, int32_t n_rot, DeviceSpan slots) {
  kv_format_rows(kv, T, head_dim, n_rot, KvFormat::Fp8, true, slots);
}

}  // namespace ds4::cuda
