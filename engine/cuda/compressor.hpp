#pragma once
// The KV compressor on the device (kernels/compressor.cuh), bit-identical to the CPU's
// engine/model/compressor.cpp in Fast mode: compressor_store of T consecutive tokens with
// compressor_pool (and compressor_roll) at every completed window, then compressed_row_finish
// (RMSNorm with weight, RoPE at the window's first position, FP8 or Hadamard + FP4, f16) into
// the compressed row store. The state lives on the device in model::CompressorState's layout;
// the rollback history and compressor_rebuild stay on the host (download, rebuild, upload).
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/cuda/kv_format.hpp"

namespace ds4::cuda {

// model::CompressorState on the device: kv and score, rows x width floats each (ratio 4: two
// windows, width 2 * head_dim, rows 8, rows 0..3 the previous window; else width head_dim, rows
// ratio). Starts reset (kv 0, score -1e30).
struct DeviceCompressor {
  int32_t ratio = 0, head_dim = 0, width = 0, rows = 0;
  DeviceBuffer kv, score;

  DeviceCompressor(int32_t ratio, int32_t head_dim);  // throws std::invalid_argument on ratio 0
  size_t floats() const { return size_t(width) * size_t(rows); }
  void reset();
  void upload(const float* kv_rows, const float* score_rows);  // floats() each
  void download(float* kv_rows, float* score_rows) const;
};

// How many windows tokens pos0 .. pos0 + T - 1 complete.
int32_t compressor_windows(int32_t ratio, uint32_t pos0, int32_t T);

// Stores T tokens (kv_in, score_in: T x width, token t at position pos0 + t; ape: the F16
// [width, ratio] tensor) and pools every completed window into `pooled` (one head_dim row each,
// in order). Returns the number of pooled rows. Throws std::invalid_argument on buffers too
// small. Asynchronous.
int32_t compressor_tokens(DeviceCompressor& st, DeviceSpan kv_in, DeviceSpan score_in, DeviceSpan ape, int32_t T,
                          uint32_t pos0, DeviceSpan pooled);

// compressed_row_finish of n pooled rows of dim floats (in place), then each into dst[t] (device
// array of n row addresses: the compressed store's next rows): RMSNorm with norm_w and eps, RoPE
// with cs (n x n_rot: the host's rope_angles at each row's first position, exact = false), the
// format (Fp8 for attention rows, Fp4Hadamard for indexer rows), f16 rounding. Asynchronous.
void compressed_rows_finish(DeviceSpan rows, int32_t n, int32_t dim, DeviceSpan norm_w, float eps, DeviceSpan cs,
                            int32_t n_rot, KvFormat fmt, DeviceSpan dst);

}  // namespace ds4::cuda
