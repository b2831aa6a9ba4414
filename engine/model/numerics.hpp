#pragma once
// Scalar numerics shared by every DS4 stage, written to reproduce antirez/ds4's CPU reference
// bit for bit: f16 rounding (round to nearest even, as ds4's f32_to_f16), RMSNorm's scale with
// the sum of squares accumulated in double (rms_norm.hpp applies it in either mode), the branching
// "stable" sigmoid used by silu and the output head, the plain 1/(1+e^-z) sigmoid of the HC
// split, softplus with ds4's +-20 cut-offs, and the sequential f32 dot product.
//
// Everything here is compiled with -ffp-contract=off, so a*b+c stays two roundings; expf, logf,
// sinf, cosf, powf and log1pf come from glibc, as in the reference build. ExactMath and FastMath
// name each mode's scalar functions for the stages written once for both (templates on Math):
// glibc's for Exact, ours for Fast (engine/quant/fast_math.hpp, docs/arithmetic.md §transcendentals).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/quant/fast_math.hpp"
#include "engine/quant/kv_sim.hpp"

namespace ds4::model {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x03ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal half: normalise
      exp = 1;
      while ((mant & 0x0400u) == 0) {
        mant <<= 1;
        exp--;
      }
      mant &= 0x03ffu;
      bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ds4's f32_to_f16 (round to nearest even), shared with the CUDA KV kernels.
inline uint16_t f32_to_f16(float f) { return quant::kvsim::f32_to_f16(f); }

inline float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// 1 / sqrt(mean(x^2) + eps) with the sum of squares in double, as ds4 computes it.
inline float rms_scale(const float* x, uint64_t n, float eps) {
  double ss = 0.0;
  for (uint64_t i = 0; i < n; i++) ss += double(x[i]) * x[i];
  return 1.0f / std::sqrt(float(ss / double(n)) + eps);
}

inline float sigmoid_stable(float x) {
  if (x >= 0.0f) {
    const float e = std::exp(-x);
    return 1.0f / (1.0f + e);
  }
  const float e = std::exp(x);
  return e / (1.0f + e);
}

inline float silu(float x) { return x * sigmoid_stable(x); }

inline float softplus_stable(float x) {
  if (x > 20.0f) return x;
  if (x < -20.0f) return std::exp(x);
  return std::log1p(std::exp(x));
}

struct ExactMath {
  static float exp(float x) { return std::exp(x); }
  static float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }
  static float sigmoid_stable(float x) { return model::sigmoid_stable(x); }
  static float silu(float x) { return model::silu(x); }
  static float softplus(float x) { return softplus_stable(x); }
};

struct FastMath {
  static float exp(float x) { return quant::fast::exp(x); }
  static float sigmoid(float z) { return quant::fast::sigmoid(z); }
  static float sigmoid_stable(float x) { return quant::fast::sigmoid_stable(x); }
  static float silu(float x) { return quant::fast::silu(x); }
  static float softplus(float x) { return quant::fast::softplus(x); }
};

// Sequential f32 dot product (the reference order).
inline float dot_f32_exact(const float* a, const float* b, uint32_t n) {
  float acc = 0.0f;
  for (uint32_t i = 0; i < n; i++) acc += a[i] * b[i];
  return acc;
}

}  // namespace ds4::model
