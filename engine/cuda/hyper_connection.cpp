// Launches kernels/hyper_connection.cuh: 256 threads a block; a row (a token; a token and stream
// for post) is split over up to one block per 256 elements while the rows are few.
#include "engine/cuda/hyper_connection.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ds4::cuda {
namespace {

size_t floats(int64_t k) { return sizeof(float) * static_cast<size_t>(k); }

void check_shape(const char* what, int64_t T, int64_t n_hc, int64_t n_embd) {
  if (T < 0 || T > (int64_t(1) << 26) || n_hc < 1 || n_hc > 16 || n_embd <= 0)
    throw std::invalid_argument(std::string("CUDA ") + what + ": " + std::to_string(T) + " tokens of " +
                                std::to_string(n_hc) + " x " + std::to_string(n_embd) +
                                " (n_hc must be 1..16, n_embd positive)");
}

void fits(const char* what, const char* buffer, DeviceSpan b, size_t bytes) {
  if (b.bytes() < bytes)
    throw std::invalid_argument(std::string("CUDA ") + what + ": " + buffer + " has " + std::to_string(b.bytes()) +
                                " bytes, needs " + std::to_string(bytes));
}

constexpr unsigned kBlock = 256;

// Blocks per row: enough to give a decode step's few rows about 1024 blocks, at most one thread
// per element. The bits do not depend on it.
int32_t parts_for(int64_t rows, int64_t n_embd) {
  const int64_t per_element = (n_embd + kBlock - 1) / kBlock, fill = (1024 + rows - 1) / rows;
  return static_cast<int32_t>(std::max<int64_t>(1, std::min(per_element, fill)));
}

}  // namespace

void hc_pre(DeviceSpan H, DeviceSpan mix, DeviceSpan scale, DeviceSpan base, int64_t T, int64_t n_hc, int64_t n_embd,
            int32_t sinkhorn_iters, float hc_eps, DeviceSpan split, DeviceSpan x) {
  check_shape("hc_pre", T, n_hc, n_embd);
  if (sinkhorn_iters < 1)
    throw std::invalid_argument("CUDA hc_pre: " + std::to_string(sinkhorn_iters) + " Sinkhorn iterations");
  const int64_t mixn = (2 + n_hc) * n_hc;
  fits("hc_pre", "H", H, floats(T * n_hc * n_embd));
  fits("hc_pre", "mix", mix, floats(T * mixn));
  fits("hc_pre", "scale", scale, floats(3));
  fits("hc_pre", "base", base, floats(mixn));
  fits("hc_pre", "split", split, floats(T * mixn));
  fits("hc_pre", "x", x, floats(T * n_embd));
  if (T == 0) return;
  uint64_t hp = H.ptr(), mp = mix.ptr(), sp = scale.ptr(), bp = base.ptr(), op = split.ptr(), xp = x.ptr();
  auto n = static_cast<int32_t>(n_hc);
  int32_t parts = parts_for(T, n_embd);
  void* args[] = {&hp, &mp, &sp, &bp, &n, &sinkhorn_iters, &hc_eps, &n_embd, &parts, &op, &xp};
  Device::open().launch("ds4_hc_pre", static_cast<unsigned>(T * parts), kBlock, 0, args);
}

void hc_post(DeviceSpan y, DeviceSpan H, DeviceSpan split, int64_t T, int64_t n_hc, int64_t n_embd, DeviceSpan out_H) {
  check_shape("hc_post", T, n_hc, n_embd);
  if (out_H.ptr() == H.ptr()) throw std::invalid_argument("CUDA hc_post: out_H must not be H");
  fits("hc_post", "y", y, floats(T * n_embd));
  fits("hc_post", "H", H, floats(T * n_hc * n_embd));
  fits("hc_post", "split", split, floats(T * (2 + n_hc) * n_hc));
  fits("hc_post", "out_H", out_H, floats(T * n_hc * n_embd));
  if (T == 0) return;
  uint64_t yp = y.ptr(), hp = H.ptr(), sp = split.ptr(), op = out_H.ptr();
  auto n = static_cast<int32_t>(n_hc);
  int32_t parts = parts_for(T * n_hc, n_embd);
  void* args[] = {&yp, &hp, &sp, &n, &n_embd, &parts, &op};
  Device::open().launch("ds4_hc_post", static_cast<unsigned>(T * n_hc * parts), kBlock, 0, args);
}

void hc_head_collapse(DeviceSpan pre, DeviceSpan scale, DeviceSpan base, DeviceSpan H, int64_t T, int64_t n_hc,
                      int64_t n_embd, float hc_eps, DeviceSpan y) {
  check_shape("hc_head_collapse", T, n_hc, n_embd);
  fits("hc_head_collapse", "pre", pre, floats(T * n_hc));
  fits("hc_head_collapse", "scale", scale, floats(1));
  fits("hc_head_collapse", "base", base, floats(n_hc));
  fits("hc_head_collapse", "H", H, floats(T * n_hc * n_embd));
  fits("hc_head_collapse", "y", y, floats(T * n_embd));
  if (T == 0) return;
  uint64_t pp = pre.ptr(), sp = scale.ptr(), bp = base.ptr(), hp = H.ptr(), yp = y.ptr();
  auto n = static_cast<int32_t>(n_hc);
  int32_t parts = parts_for(T, n_embd);
  void* args[] = {&pp, &sp, &bp, &hp, &n, &hc_eps, &n_embd, &parts, &yp};
  Device::open().launch("ds4_hc_head", static_cast<unsigned>(T * parts), kBlock, 0, args);
}

}  // namespace ds4::cuda
