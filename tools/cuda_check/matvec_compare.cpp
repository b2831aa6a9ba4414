// See matvec_compare.hpp.
#include "tools/cuda_check/matvec_compare.hpp"

#include <bit>
#include <random>
#include <sstream>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/matvec.hpp"

namespace ds4::cuda_check {
namespace {
// The device kernels follow the Fast order; its generic CPU kernel is the reference.
constexpr quant::Isa kFastReference{quant::Arch::Generic, quant::Order::Fast};
}  // namespace

MatvecInputs matvec_inputs(quant::Type type, int64_t rows, int64_t cols, bool special, uint32_t seed, int act_rows) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  MatvecInputs in;
  const size_t rb = in.row_bytes = quant::row_bytes(type, static_cast<uint64_t>(cols));
  std::vector<uint8_t>& w = in.w;
  w.resize(rb * rows);
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; r++) {
    for (auto& v : row) v = nd(rng) * (r % 7 == 0 ? 1e-6f : 1.0f);
    quant::quantize_row(type, row.data(), w.data() + r * rb, cols, nullptr);
  }
  // Subnormals, signed zeros, large values; none whose products could overflow to inf and so
  // to a NaN (NaN payloads are not part of the contract: docs/arithmetic.md §conventions).
  if (special && type == quant::Type::F16) {
    auto* h = reinterpret_cast<uint16_t*>(w.data());
    const uint16_t specials[] = {0x0001, 0x8001, 0x03ff, 0x0000, 0x8000, 0x7bff, 0xfbff};
    for (int64_t i = 0; i < 7 * 13 && i < cols; i++) h[i * 3 % cols] = specials[i % 7];
  }
  if (special && type == quant::Type::BF16) {
    auto* h = reinterpret_cast<uint16_t*>(w.data());
    const uint16_t specials[] = {0x0001, 0x8001, 0x007f, 0x0000, 0x8000, 0x5f80, 0xdf80};
    for (int64_t i = 0; i < 7 * 13 && i < cols; i++) h[i * 3 % cols] = specials[i % 7];
  }
  if (special && type == quant::Type::F32) {
    auto* f = reinterpret_cast<uint32_t*>(w.data());
    const uint32_t specials[] = {0x00000001, 0x80000001, 0x007fffff, 0, 0x80000000, 0x5f800000, 0xdf800000};
    for (int64_t i = 0; i < 7 * 13 && i < cols; i++) f[i * 3 % cols] = specials[i % 7];
  }
  const quant::Type vdt = quant::traits(type).vec_dot_type;
  const size_t arb = in.act_row_bytes = quant::act_row_bytes(vdt, cols);
  const int n = act_rows;
  in.act.resize(arb * n);
  std::vector<float> x(cols);
  for (int t = 0; t < n; t++) {
    for (auto& v : x) v = nd(rng) * static_cast<float>(t + 1);
    quant::quantize_activation(vdt, x.data(), in.act.data() + t * arb, cols);
  }
  return in;
}

float reference_dot(quant::Type type, const MatvecInputs& in, int64_t cols, int64_t r, int t) {
  return quant::dot(type, in.w.data() + r * in.row_bytes, in.act.data() + t * in.act_row_bytes, cols, kFastReference);
}

CompareResult compare_matvec(quant::Type type, int64_t rows, int64_t cols, bool special, uint32_t seed) {
  const MatvecInputs in = matvec_inputs(type, rows, cols, special, seed);
  const std::vector<uint8_t>& act = in.act;
  const size_t arb = in.act_row_bytes;
  const int n = cuda::kMaxMatvecWidth;
  const cuda::DeviceWeight dw = cuda::upload_weight(type, in.w.data(), rows, cols);
  cuda::DeviceBuffer dact(act.size());
  dact.upload(act.data(), act.size());
  cuda::DeviceBuffer dout(sizeof(float) * n * rows);
  CompareResult res;
  std::vector<float> got(static_cast<size_t>(n) * rows);
  for (int width = 1; width <= n; width++) {
    cuda::matvec(dw, dact, arb, width, dout);
    dout.download(got.data(), sizeof(float) * width * rows);
    for (int t = 0; t < width; t++)
      for (int64_t r = 0; r < rows; r++) {
        const float want = reference_dot(type, in, cols, r, t);
        const float g = got[static_cast<size_t>(t) * rows + r];
        res.compared++;
        if (std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(want)) continue;
        if (res.mismatched++ == 0) {
          std::ostringstream s;
          s << quant::type_info(type).name << " " << rows << "x" << cols << " width " << width << " row " << r
            << " act " << t << ": gpu " << g << " cpu " << want;
          res.first_mismatch = s.str();
        }
      }
  }
  return res;
}

}  // namespace ds4::cuda_check
