// Launches kernels/attention.cuh: pass 1 one 256-thread block per (row, head), pass 2 one block
// per head of d threads rounded up to a warp. scale = 1 / sqrt(d) as the CPU computes it.
#include "engine/cuda/attention.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ds4::cuda {

namespace {

void launch_attention(DeviceSpan q, DeviceSpan rows, int32_t n_fixed, DeviceSpan extra, int32_t n_max, int32_t n_head,
                      int32_t d, DeviceSpan sinks, DeviceSpan scores, DeviceSpan out) {
  const auto floats = [](int64_t k) { return sizeof(float) * static_cast<size_t>(k); };
  const int64_t pairs = int64_t(n_max) * n_head;
  if (n_fixed < 0 || n_max < n_fixed || n_head <= 0 || d <= 0 || d > 1024 || pairs > (int64_t(1) << 31) - 1 ||
      q.bytes() < floats(int64_t(n_head) * d) || rows.bytes() < sizeof(uint64_t) * size_t(n_max) ||
      sinks.bytes() < floats(n_head) || scores.bytes() < floats(pairs) || out.bytes() < floats(int64_t(n_head) * d) ||
      (extra.ptr() != 0 && extra.bytes() < sizeof(int32_t)))
    throw std::invalid_argument("CUDA attention: " + std::to_string(n_max) + " rows, " + std::to_string(n_head) +
                                " heads of " + std::to_string(d) + " do not fit the buffers");
  float scale = 1.0f / std::sqrt(float(d));  // attention_fast.cpp's kq_scale
  uint64_t qp = q.ptr(), rp = rows.ptr(), sp = scores.ptr(), kp = sinks.ptr(), op = out.ptr(), ep = extra.ptr();
  int64_t d64 = d;
  Device& dev = Device::open();
  if (n_max > 0) {
    void* args[] = {&qp, &rp, &n_head, &d64, &scale, &sp, &n_fixed, &ep};
    dev.launch("ds4_attn_scores", static_cast<unsigned>(pairs), 256, 0, args);
  }
  const unsigned threads = static_cast<unsigned>((d + 31) / 32 * 32);
  void* args[] = {&sp, &rp, &n_fixed, &ep, &n_head, &d, &kp, &op};
  dev.launch("ds4_attn_combine", static_cast<unsigned>(n_head), threads, threads * sizeof(float), args);
}

}  // namespace

void attention_fast(DeviceSpan q, DeviceSpan rows, int32_t n, int32_t n_head, int32_t d, DeviceSpan sinks,
                    DeviceSpan scores, DeviceSpan out) {
  launch_attention(q, rows, n, {}, n, n_head, d, sinks, scores, out);
}

void attention_fast_counted(DeviceSpan q, DeviceSpan rows, int32_t n_fixed, DeviceSpan extra, int32_t n_max,
                            int32_t n_head, int32_t d, DeviceSpan sinks, DeviceSpan scores, DeviceSpan out) {
  if (extra.ptr() == 0) throw std::invalid_argument("CUDA attention: no device count of the extra rows");
  launch_attention(q, rows, n_fixed, extra, n_max, n_head, d, sinks, scores, out);
}

}  // namespace ds4::cuda
