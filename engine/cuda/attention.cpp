// Launches kernels/attention.cuh: pass 1 one 256-thread block per (row, head), pass 2 one block
// per (query, head) of d threads rounded up to a warp. scale = 1 / sqrt(d) as the CPU computes it.
#include "engine/cuda/attention.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ds4::cuda {

namespace {

size_t floats(int64_t k) { return sizeof(float) * static_cast<size_t>(k); }

void check_shapes(const char* what, int64_t queries, int64_t slots, int32_t n_head, int32_t d, DeviceSpan q,
                  DeviceSpan sinks, DeviceSpan scores, DeviceSpan out) {
  const int64_t pairs = slots * n_head;
  if (queries < 0 || slots < 0 || n_head <= 0 || d <= 0 || d > 1024 || pairs > (int64_t(1) << 31) - 1 ||
      queries * n_head > (int64_t(1) << 31) - 1 || q.bytes() < floats(queries * n_head * d) ||
      sinks.bytes() < floats(n_head) || scores.bytes() < floats(pairs) || out.bytes() < floats(queries * n_head * d))
    throw std::invalid_argument(std::string("CUDA ") + what + ": " + std::to_string(queries) + " queries over " +
                                std::to_string(slots) + " rows, " + std::to_string(n_head) + " heads of " +
                                std::to_string(d) + " do not fit the buffers");
}

unsigned combine_threads(int32_t d) { return static_cast<unsigned>((d + 31) / 32 * 32); }

}  // namespace

void attention_fast(DeviceSpan q, DeviceSpan rows, int32_t n, int32_t n_head, int32_t d, DeviceSpan sinks,
                    DeviceSpan scores, DeviceSpan out) {
  check_shapes("attention", 1, n, n_head, d, q, sinks, scores, out);
  if (rows.bytes() < sizeof(uint64_t) * size_t(n))
    throw std::invalid_argument("CUDA attention: " + std::to_string(n) + " rows do not fit the row list");
  float scale = 1.0f / std::sqrt(float(d));  // attention_fast.cpp's kq_scale
  uint64_t qp = q.ptr(), rp = rows.ptr(), sp = scores.ptr(), kp = sinks.ptr(), op = out.ptr();
  int64_t d64 = d;
  Device& dev = Device::open();
  if (n > 0) {
    void* args[] = {&qp, &rp, &n_head, &d64, &scale, &sp};
    dev.launch("ds4_attn_scores", static_cast<unsigned>(int64_t(n) * n_head), 256, 0, args);
  }
  const unsigned threads = combine_threads(d);
  void* args[] = {&sp, &rp, &n, &n_head, &d, &kp, &op};
  dev.launch("ds4_attn_combine", static_cast<unsigned>(n_head), threads, threads * sizeof(float), args);
}

void attention_fast_rows(DeviceSpan q, const AttentionRows& t, int32_t n_head, int32_t d, DeviceSpan sinks,
                         DeviceSpan scores, DeviceSpan out) {
  check_shapes("attention_rows", t.T, t.slots, n_head, d, q, sinks, scores, out);
  const size_t ints = sizeof(int32_t) * size_t(t.T);
  if (t.rows.bytes() < sizeof(uint64_t) * size_t(t.slots) || t.first.bytes() < ints + sizeof(int32_t) ||
      t.n_fixed.bytes() < ints || (t.extra.ptr() != 0 && t.extra.bytes() < ints))
    throw std::invalid_argument("CUDA attention_rows: " + std::to_string(t.T) + " queries over " +
                                std::to_string(t.slots) + " rows do not fit the row table");
  if (t.T == 0) return;
  float scale = 1.0f / std::sqrt(float(d));
  uint64_t qp = q.ptr(), rp = t.rows.ptr(), fp = t.first.ptr(), np = t.n_fixed.ptr(), ep = t.extra.ptr(),
           sp = scores.ptr(), kp = sinks.ptr(), op = out.ptr();
  int32_t T = t.T;
  int64_t d64 = d;
  Device& dev = Device::open();
  if (t.slots > 0) {
    void* args[] = {&qp, &rp, &fp, &np, &ep, &T, &n_head, &d64, &scale, &sp};
    dev.launch("ds4_attn_scores_rows", static_cast<unsigned>(int64_t(t.slots) * n_head), 256, 0, args);
  }
  const unsigned threads = combine_threads(d);
  void* args[] = {&sp, &rp, &fp, &np, &ep, &n_head, &d, &kp, &op};
  dev.launch("ds4_attn_combine_rows", static_cast<unsigned>(int64_t(T) * n_head), threads, threads * sizeof(float),
             args);
}

}  // namespace ds4::cuda
