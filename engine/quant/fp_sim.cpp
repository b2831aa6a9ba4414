// FP8 (E4M3FN) and FP4 (E2M1) quantize-dequantize simulations and the 128-point Hadamard
// rotation used by DeepSeek V4's KV cache and indexer (docs/quant.md §format-simulations). They are part of the model
// graph: leaving them out changes attention and indexer top-k. The arithmetic mirrors ds4's CPU code (division by the
// power-of-two scale, log2f/ceilf/ldexpf for the scale, f32 |difference| comparisons for nearest-value search) so the
// results match it bit for bit.
#include "engine/quant/fp_sim.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ds4::quant {
namespace {

float e4m3_value(int code) {
  const int exp = (code >> 3) & 15, mant = code & 7;
  if (exp == 0) return static_cast<float>(mant) * 0.001953125f;
  return (1.0f + static_cast<float>(mant) * 0.125f) * std::ldexp(1.0f, exp - 7);
}

const std::array<float, 127>& e4m3_table() {
  static const std::array<float, 127> t = [] {
    std::array<float, 127> v{};
    for (int c = 0; c < 127; c++) v[c] = e4m3_value(c);
    return v;
  }();
  return t;
}

constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// The block scaling both simulations share: scale = 2^ceil(log2(amax / fmt_max)) with amax
// floored at amax_floor; each value is divided by the scale, clamped to +-fmt_max, rounded to
// the format and multiplied back.
template <class Round>
void simulate_scaled_block(float* x, int n, float fmt_max, float amax_floor, Round round) {
  float amax = 0.0f;
  for (int i = 0; i < n; i++) amax = std::fabs(x[i]) > amax ? std::fabs(x[i]) : amax;
  if (amax < amax_floor) amax = amax_floor;
  const float scale = std::ldexp(1.0f, static_cast<int>(std::ceil(std::log2(amax / fmt_max))));
  for (int i = 0; i < n; i++) {
    float v = x[i] / scale;
    if (v > fmt_max) v = fmt_max;
    if (v < -fmt_max) v = -fmt_max;
    x[i] = round(v) * scale;
  }
}

}  // namespace

float e4m3fn_round(float x) {
  const std::array<float, 127>& t = e4m3_table();
  const float sign = x < 0.0f ? -1.0f : 1.0f;
  const float ax = std::fmin(std::fabs(x), 448.0f);
  int lo = 0, hi = 126;  // largest code with value <= ax
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (t[mid] <= ax) lo = mid;
    else hi = mid - 1;
  }
  int best = lo;
  if (best < 126) {
    const float d_lo = std::fabs(ax - t[best]), d_hi = std::fabs(ax - t[best + 1]);
    if (d_hi < d_lo || (d_hi == d_lo && (best + 1) % 2 == 0)) best++;
  }
  return sign * t[best];
}

void fp8_e4m3_simulate_block64(float* x) { simulate_scaled_block(x, 64, 448.0f, 1.0e-4f, e4m3fn_round); }

void fp8_kv_simulate_row(float* x, int n_nope) {
  if (n_nope < 0 || n_nope % 64 != 0)
    throw std::invalid_argument("FP8 KV simulation needs a multiple of 64 non-RoPE dims, got " +
                                std::to_string(n_nope));
  for (int off = 0; off < n_nope; off += 64) fp8_e4m3_simulate_block64(x + off);
}

void hadamard128(float* x) {
  for (int stride = 1; stride < 128; stride *= 2)
    for (int base = 0; base < 128; base += 2 * stride)
      for (int i = 0; i < stride; i++) {
        const float a = x[base + i], b = x[base + stride + i];
        x[base + i] = a + b;
        x[base + stride + i] = a - b;
      }
  for (int i = 0; i < 128; i++) x[i] *= 0.08838834764831845f;
}

float e2m1_round(float x) {
  const float sign = x < 0.0f ? -1.0f : 1.0f;
  const float ax = std::fmin(std::fabs(x), 6.0f);
  int best = 0;
  float best_diff = std::fabs(ax - kE2M1[0]);
  for (int i = 1; i < 8; i++) {
    const float diff = std::fabs(ax - kE2M1[i]);
    if (diff < best_diff || (diff == best_diff && i % 2 == 0 && best % 2 != 0)) {
      best = i;
      best_diff = diff;
    }
  }
  return sign * kE2M1[best];
}

void fp4_e2m1_simulate_block32(float* x) { simulate_scaled_block(x, 32, 6.0f, 7.052966104933725e-38f, e2m1_round); }

void fp4_simulate_row(float* x, int n) {
  if (n < 0 || n % 32 != 0)
    throw std::invalid_argument("FP4 simulation needs a multiple of 32 values, got " + std::to_string(n));
  for (int off = 0; off < n; off += 32) fp4_e2m1_simulate_block32(x + off);
}

void indexer_qat_row(float* x) {
  hadamard128(x);
  fp4_simulate_row(x, 128);
}

}  // namespace ds4::quant
