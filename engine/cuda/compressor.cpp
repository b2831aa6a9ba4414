// Launches kernels/compressor.cuh (one thread per channel, 128 per block) and the finishing
// stages (rms_norm.cuh, rope.cuh, kv_format.cuh) of the compressed rows.
#include "engine/cuda/compressor.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cuda/rms_norm.hpp"
#include "engine/cuda/rope.hpp"

namespace ds4::cuda {

DeviceCompressor::DeviceCompressor(int32_t ratio_, int32_t head_dim_) : ratio(ratio_), head_dim(head_dim_) {
  if (ratio <= 0 || head_dim <= 0)
    throw std::invalid_argument("CUDA compressor: ratio " + std::to_string(ratio) + ", head_dim " +
                                std::to_string(head_dim));
  const int32_t coff = ratio == 4 ? 2 : 1;
  width = coff * head_dim;
  rows = coff * ratio;
  kv = DeviceBuffer(floats() * sizeof(float));
  score = DeviceBuffer(floats() * sizeof(float));
  reset();
}

void DeviceCompressor::reset() {
  const std::vector<float> zeros(floats(), 0.0f), low(floats(), -1.0e30f);
  upload(zeros.data(), low.data());
}

void DeviceCompressor::upload(const float* kv_rows, const float* score_rows) {
  kv.upload(kv_rows, floats() * sizeof(float));
  score.upload(score_rows, floats() * sizeof(float));
}

void DeviceCompressor::download(float* kv_rows, float* score_rows) const {
  kv.download(kv_rows, floats() * sizeof(float));
  score.download(score_rows, floats() * sizeof(float));
}

int32_t compressor_windows(int32_t ratio, uint32_t pos0, int32_t T) {
  const auto done = [&](uint64_t p) { return p / uint64_t(ratio); };  // windows completed by p tokens
  return T <= 0 ? 0 : int32_t(done(uint64_t(pos0) + uint64_t(T)) - done(pos0));
}

int32_t compressor_tokens(DeviceCompressor& st, DeviceSpan kv_in, DeviceSpan score_in, DeviceSpan ape, int32_t T,
                          uint32_t pos0, DeviceSpan pooled) {
  const int32_t n = compressor_windows(st.ratio, pos0, T);
  const size_t in = sizeof(float) * size_t(T < 0 ? 0 : T) * size_t(st.width);
  if (T < 0 || kv_in.bytes() < in || score_in.bytes() < in ||
      ape.bytes() < sizeof(uint16_t) * size_t(st.ratio) * size_t(st.width) ||
      pooled.bytes() < sizeof(float) * size_t(n) * size_t(st.head_dim))
    throw std::invalid_argument("CUDA compressor: " + std::to_string(T) + " tokens of width " +
                                std::to_string(st.width) + " (ratio " + std::to_string(st.ratio) +
                                ") do not fit the buffers");
  if (T == 0) return 0;
  uint64_t kp = st.kv.ptr(), sp = st.score.ptr(), ki = kv_in.ptr(), si = score_in.ptr(), ap = ape.ptr(),
           pp = pooled.ptr();
  int32_t ratio = st.ratio, hd = st.head_dim;
  void* args[] = {&kp, &sp, &ki, &si, &ap, &ratio, &hd, &T, &pos0, &pp};
  constexpr unsigned kBlock = 128;
  Device::open().launch("ds4_compressor", static_cast<unsigned>((hd + kBlock - 1) / kBlock), kBlock, 0, args);
  return n;
}

void compressed_rows_finish(DeviceSpan rows, int32_t n, int32_t dim, DeviceSpan norm_w, float eps, DeviceSpan cs,
                            int32_t n_rot, KvFormat fmt, DeviceSpan dst) {
  if (n < 0 || dim <= 0 || norm_w.bytes() < sizeof(float) * size_t(dim))
    throw std::invalid_argument("CUDA compressed_rows_finish: " + std::to_string(n) + " rows of " +
                                std::to_string(dim) + " do not fit the buffers");
  if (n == 0) return;
  rms_norm(rows, norm_w, rows, n, dim, eps);
  rope(rows, cs, n, 1, dim, n_rot);
  kv_format_rows(rows, n, dim, n_rot, fmt, true, dst);
}

}  // namespace ds4::cuda
