// FP8 E4M3 / FP4 E2M1 / E8M0 decoding and encoding; see official_formats.hpp.
#include "toolchain/convert/official_formats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ds4::convert {
namespace {

// Code 8 is E2M1's negative zero; it decodes to +0.0f, as GGML's MXFP4 table does, so the two
// layouts dequantize to identical bits.
constexpr float kE2M1[16] = {0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> a{};
    for (int x = 0; x < 256; ++x) {
      const int mag = x & 0x7f, exp = mag >> 3, man = mag & 7;
      float v;
      if (mag == 0x7f) v = NAN;
      else if (exp == 0) v = std::ldexp(static_cast<float>(man), -9);
      else v = std::ldexp(1.0f + man / 8.0f, exp - 7);
      a[x] = (x & 0x80) ? -v : v;
    }
    return a;
  }();
  return t;
}

float scale_at(const uint8_t* scale, uint64_t idx) {
  const float s = e8m0_value(scale[idx]);
  if (std::isnan(s)) throw std::runtime_error("NaN scale (E8M0 0xff) at scale element " + std::to_string(idx));
  return s;
}

uint8_t e8m0_for(float amax, float top) {
  if (!(amax > 0)) return 127 - 20;  // an all-zero block: any finite scale
  const int e = static_cast<int>(std::ceil(std::log2(amax / top))) + 127;
  return static_cast<uint8_t>(std::clamp(e, 1, 254));
}

uint8_t nearest_e2m1(float v) {
  const float a = std::fabs(v);
  int best = 0;
  for (int k = 1; k < 8; ++k)
    if (std::fabs(kE2M1[k] - a) < std::fabs(kE2M1[best] - a)) best = k;
  return static_cast<uint8_t>(best | (std::signbit(v) && best ? 8 : 0));
}

}  // namespace

float e8m0_value(uint8_t e) {
  if (e == 0xff) return NAN;
  return e == 0 ? std::ldexp(1.0f, -127) : std::ldexp(1.0f, int(e) - 127);
}
float e4m3_value(uint8_t x) { return e4m3_table()[x]; }
float e2m1_value(uint8_t code) { return kE2M1[code & 15]; }

uint8_t f32_to_e4m3(float x) {
  const auto& t = e4m3_table();
  const float a = std::min(std::fabs(x), 448.0f);
  // Positive codes 0..0x7e are increasing; pick the nearest, ties to the even code.
  int lo = 0, hi = 0x7e;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (t[mid] <= a) lo = mid;
    else hi = mid - 1;
  }
  int code = lo;
  if (lo < 0x7e) {
    const float dl = a - t[lo], dh = t[lo + 1] - a;
    if (dh < dl || (dh == dl && (lo & 1))) code = lo + 1;
  }
  return static_cast<uint8_t>(code | (std::signbit(x) && code ? 0x80 : 0));
}

void decode_fp8_rows(const uint8_t* w, const uint8_t* scale, uint64_t in, uint64_t row0, uint64_t n, float* out) {
  const auto& t = e4m3_table();
  const uint64_t scols = (in + 127) / 128;
  for (uint64_t r = 0; r < n; ++r) {
    const uint64_t row = row0 + r;
    const uint8_t* src = w + row * in;
    float* dst = out + r * in;
    for (uint64_t cb = 0; cb < scols; ++cb) {
      const float s = scale_at(scale, (row / 128) * scols + cb);
      const uint64_t c1 = std::min(in, (cb + 1) * 128);
      for (uint64_t c = cb * 128; c < c1; ++c) {
        const float v = t[src[c]];
        if (std::isnan(v))
          throw std::runtime_error("NaN FP8 value at row " + std::to_string(row) + ", column " + std::to_string(c));
        dst[c] = v * s;
      }
    }
  }
}

void decode_fp4_rows(const uint8_t* w, const uint8_t* scale, uint64_t in, uint64_t row0, uint64_t n, float* out) {
  const uint64_t nb = in / 32;
  for (uint64_t r = 0; r < n; ++r) {
    const uint64_t row = row0 + r;
    const uint8_t* src = w + row * (in / 2);
    float* dst = out + r * in;
    for (uint64_t b = 0; b < nb; ++b) {
      const float s = scale_at(scale, row * nb + b);
      for (int j = 0; j < 16; ++j) {
        const uint8_t q = src[b * 16 + j];
        dst[b * 32 + 2 * j] = kE2M1[q & 15] * s;
        dst[b * 32 + 2 * j + 1] = kE2M1[q >> 4] * s;
      }
    }
  }
}

void repack_fp4_row_to_mxfp4(const uint8_t* w_row, const uint8_t* scale_row, uint64_t in, uint8_t* out) {
  for (uint64_t b = 0; b < in / 32; ++b) {
    if (scale_row[b] == 0xff) throw std::runtime_error("NaN scale (E8M0 0xff) in block " + std::to_string(b));
    uint8_t code[32];
    for (int j = 0; j < 16; ++j) {
      code[2 * j] = w_row[b * 16 + j] & 15;
      code[2 * j + 1] = w_row[b * 16 + j] >> 4;
    }
    uint8_t* blk = out + b * 17;
    blk[0] = scale_row[b];
    for (int j = 0; j < 16; ++j) blk[1 + j] = static_cast<uint8_t>(code[j] | code[j + 16] << 4);
  }
}

void repack_mxfp4_row_to_fp4(const uint8_t* mx, uint64_t in, uint8_t* w_row, uint8_t* scale_row) {
  for (uint64_t b = 0; b < in / 32; ++b) {
    const uint8_t* blk = mx + b * 17;
    scale_row[b] = blk[0];
    uint8_t code[32];
    for (int j = 0; j < 16; ++j) code[j] = blk[1 + j] & 15, code[j + 16] = blk[1 + j] >> 4;
    for (int j = 0; j < 16; ++j) w_row[b * 16 + j] = static_cast<uint8_t>(code[2 * j] | code[2 * j + 1] << 4);
  }
}

void encode_fp8(const float* w, uint64_t out_rows, uint64_t in, uint8_t* q, uint8_t* scale) {
  const uint64_t srows = (out_rows + 127) / 128, scols = (in + 127) / 128;
  for (uint64_t rb = 0; rb < srows; ++rb)
    for (uint64_t cb = 0; cb < scols; ++cb) {
      const uint64_t r1 = std::min(out_rows, (rb + 1) * 128), c1 = std::min(in, (cb + 1) * 128);
      float amax = 0;
      for (uint64_t r = rb * 128; r < r1; ++r)
        for (uint64_t c = cb * 128; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * in + c]));
      const uint8_t e = e8m0_for(amax, 448.0f);
      scale[rb * scols + cb] = e;
      const float inv = 1.0f / e8m0_value(e);
      for (uint64_t r = rb * 128; r < r1; ++r)
        for (uint64_t c = cb * 128; c < c1; ++c) q[r * in + c] = f32_to_e4m3(w[r * in + c] * inv);
    }
}

void encode_fp4(const float* w, uint64_t out_rows, uint64_t in, uint8_t* q, uint8_t* scale) {
  const uint64_t nb = in / 32;
  for (uint64_t r = 0; r < out_rows; ++r)
    for (uint64_t b = 0; b < nb; ++b) {
      const float* x = w + r * in + b * 32;
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
      const uint8_t e = e8m0_for(amax, 6.0f);
      scale[r * nb + b] = e;
      const float inv = 1.0f / e8m0_value(e);
      uint8_t* dst = q + r * (in / 2) + b * 16;
      for (int j = 0; j < 16; ++j)
        dst[j] = static_cast<uint8_t>(nearest_e2m1(x[2 * j] * inv) | nearest_e2m1(x[2 * j + 1] * inv) << 4);
    }
}

}  // namespace ds4::convert
