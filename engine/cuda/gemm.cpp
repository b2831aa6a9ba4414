// Launches kernels/gemm_blocks32.cuh for Q8_0 and MXFP4 (one 32- or 64-token x 64-row output tile
// per thread block, token tiles innermost: ds4_gemm_<format>_t32 with 256 threads for n <= 32,
// _t64 with 512 above), kernels/gemm_q4_k.cuh, gemm_q2_k.cuh and gemm_iq2_xxs.cuh (32 x 32 tiles,
// 256 threads), or falls back to matvec per 8 activation rows for the float formats.
#include "engine/cuda/gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/quant/quant.hpp"

namespace ds4::cuda {
namespace {
constexpr int kWarpTokens = 32, kTileRows = 64;  // kernels/gemm_blocks32.cuh
}  // namespace

bool gemm_uses_tensor_cores(const DeviceWeight& w, int n) {
  const quant::Type t = w.type;
  return (t == quant::Type::Q8_0 || t == quant::Type::MXFP4 || t == quant::Type::Q4_K || t == quant::Type::Q2_K ||
          t == quant::Type::IQ2_XXS) &&
         n > kMaxMatvecWidth;
}

void gemm(const DeviceWeight& w, DeviceSpan act, size_t act_row_bytes, int n, DeviceSpan out) {
  if (n < 1) throw std::invalid_argument("CUDA gemm: " + std::to_string(n) + " activation rows");
  if (n <= kMaxMatvecWidth) {
    matvec(w, act, act_row_bytes, n, out);
    return;
  }
  const quant::Type vdt = quant::traits(w.type).vec_dot_type;
  const size_t need = quant::act_row_bytes(vdt, w.cols);
  if (act_row_bytes < need || act.bytes() < act_row_bytes * (n - 1) + need)
    throw std::invalid_argument("CUDA gemm: activation buffer of " + std::to_string(act.bytes()) +
                                " bytes too small for " + std::to_string(n) + " rows of " + std::to_string(need));
  if (out.bytes() < sizeof(float) * static_cast<size_t>(n) * w.rows)
    throw std::invalid_argument("CUDA gemm: output buffer too small for " + std::to_string(n) + " rows");
  if (act_row_bytes % sizeof(float) != 0)
    throw std::invalid_argument("CUDA gemm: activation rows must be a multiple of 4 bytes apart");
  if (!gemm_uses_tensor_cores(w, n)) {
    for (int t = 0; t < n; t += kMaxMatvecWidth) {
      const int width = std::min(kMaxMatvecWidth, n - t);
      const size_t out_row = sizeof(float) * static_cast<size_t>(w.rows);
      matvec(w, act.sub(t * act_row_bytes, act.bytes() - t * act_row_bytes), act_row_bytes, width,
             out.sub(t * out_row, width * out_row));
    }
    return;
  }
  if (w.type != quant::Type::Q8_0 && w.type != quant::Type::MXFP4) {  // K-quants, IQ2_XXS: 32 x 32, 256 threads
    uint64_t wp = w.data.ptr(), ap = act.ptr(), op = out.ptr();
    int64_t rows = w.rows, cols = w.cols, stride = static_cast<int64_t>(act_row_bytes), tokens = n;
    void* args[] = {&wp, &rows, &cols, &ap, &stride, &tokens, &op};
    const int64_t tiles = (rows + 31) / 32 * ((tokens + 31) / 32);
    if (tiles > 0x7fffffff)
      throw std::invalid_argument("CUDA gemm: " + std::to_string(tiles) + " tiles (grid too large)");
    const char* name = w.type == quant::Type::Q4_K   ? "ds4_gemm_q4_k"
                       : w.type == quant::Type::Q2_K ? "ds4_gemm_q2_k"
                                                     : "ds4_gemm_iq2_xxs";
    Device::open().launch(name, static_cast<unsigned>(tiles), 256, 0, args);
    return;
  }
  const int per_slice = n <= kWarpTokens ? 1 : 2;  // warps per slice: the W of the kernel
  const int64_t tile_tokens = int64_t{kWarpTokens} * per_slice;
  uint64_t wp = w.data.ptr(), ap = act.ptr(), op = out.ptr();
  int64_t rows = w.rows, cols = w.cols, stride = static_cast<int64_t>(act_row_bytes), tokens = n;
  void* args[] = {&wp, &rows, &cols, &ap, &stride, &tokens, &op};
  const int64_t tiles = (rows + kTileRows - 1) / kTileRows * ((tokens + tile_tokens - 1) / tile_tokens);
  if (tiles > 0x7fffffff)
    throw std::invalid_argument("CUDA gemm: " + std::to_string(tiles) + " tiles (grid too large)");
  const std::string name = std::string(w.type == quant::Type::Q8_0 ? "ds4_gemm_q8_0" : "ds4_gemm_mxfp4") +
                           (per_slice == 1 ? "_t32" : "_t64");
  Device::open().launch(name.c_str(), static_cast<unsigned>(tiles), 256 * per_slice, 0, args);
}

}  // namespace ds4::cuda
