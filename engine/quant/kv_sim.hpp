#pragma once
// Internal: the per-element steps of the KV-format simulations (quant/fp_sim.hpp) and the f16
// rounding of stored KV rows, as `__host__ __device__` functions: fp_sim.cpp and
// engine/model/numerics.hpp are written with them and the CUDA KV kernels
// (engine/cuda/kernels/kv_format.cuh) call them, so the CPU tests exercise the GPU's arithmetic.
// The block scale 2^ceil(log2f(amax / max)) is computed from the bits (no libm): ceil_log2f
// gives what ceil(glibc log2f(r)) gives for every positive finite float (checked against glibc for
// all of them once, and on samples by tests/engine/cuda/emulated_kv_test.cpp).
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

namespace ds4::quant::kvsim {

DS4_HD uint32_t f32_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}

DS4_HD float abs(float x) { return arith::bits_to_f32(f32_bits(x) & 0x7fffffffu); }

// IEEE round to nearest even f32 -> f16 bits (ds4's f32_to_f16; NaN -> quiet NaN, overflow -> inf).
DS4_HD uint16_t f32_to_f16(float f) {
  const uint32_t bits = f32_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((bits >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = bits & 0x7fffffu;
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    const uint32_t round_bit = (mant >> (shift - 1)) & 1u;
    const uint32_t sticky = mant & ((1u << (shift - 1)) - 1u);
    if (round_bit && (sticky || (half_mant & 1u))) half_mant++;
    return static_cast<uint16_t>(sign | half_mant);
  }
  if (exp >= 31) {
    if (((bits >> 23) & 0xffu) == 0xffu && mant != 0) return static_cast<uint16_t>(sign | 0x7e00u);
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t round = mant & 0x1fffu;
  if (round > 0x1000u || (round == 0x1000u && (half & 1u))) half++;
  return static_cast<uint16_t>(half);
}

DS4_HD float round_f16(float x) { return arith::f16_to_f32(f32_to_f16(x)); }

// ceil(log2f(r)) for finite r > 0, as glibc's log2f rounds: r = (1 + m 2^-23) 2^e. m = 0 gives e;
// otherwise log2 r = e + f with 0 < f < 1 and the ceiling is e + 1 unless e + f rounds to e in
// binary32, i.e. unless f is below half the float spacing next to e on the side of e + f
// (f ~ m 2^-23 / ln 2; no m lies within 1% of a threshold, so this is glibc's decision).
DS4_HD int ceil_log2f(float r) {
  const uint32_t u = f32_bits(r);
  int e = static_cast<int>(u >> 23) - 127;
  uint32_t m = u & 0x7fffffu;
  if (e == -127) {  // subnormal: normalise
    e = -126;
    while ((m & 0x800000u) == 0) {
      m <<= 1;
      e--;
    }
    m &= 0x7fffffu;
  }
  if (m == 0) return e;
  const int a = e < 0 ? -e : e;
  if (a < 2) return e + 1;
  int lg = 0;  // floor(log2 a)
  while ((2 << lg) <= a) lg++;
  // spacing = 2^(lg - 23) above a, and below a too unless a is a power of two (then half that);
  // the half spacing as a power of two 2^-23 * 2^s:
  const int s = (e < 0 && a == (1 << lg)) ? lg - 2 : lg - 1;
  if (s < 0) return e + 1;  // half spacing below 2^-23: even m = 1 exceeds it
  // f < 2^(s-23)  <=>  m / ln 2 < 2^s (to far better than the 1% margin)
  const bool rounds_to_e = fast::dmul(static_cast<double>(m), 1.4426950408889634) < static_cast<double>(1 << s);
  return rounds_to_e ? e : e + 1;
}

// 2^k as a float (ldexpf(1, k)): 0 below -149, subnormal to -127, +inf above 127.
DS4_HD float pow2f(int k) {
  if (k < -149) return 0.0f;
  if (k < -126) return arith::bits_to_f32(1u << (k + 149));
  if (k > 127) return arith::bits_to_f32(0x7f800000u);
  return fast::pow2i(k);
}

// The block scale of the simulations: 2^ceil(log2(max(amax, amax_floor) / fmt_max)).
DS4_HD float block_scale(float amax, float fmt_max, float amax_floor) {
  if (amax < amax_floor) amax = amax_floor;
  return pow2f(ceil_log2f(fast::div(amax, fmt_max)));
}

// The E4M3FN value of code 0..126.
DS4_HD float e4m3_value(int code) {
  const int exp = (code >> 3) & 15, mant = code & 7;
  if (exp == 0) return arith::mul(static_cast<float>(mant), 0.001953125f);
  return arith::mul(arith::add(1.0f, arith::mul(static_cast<float>(mant), 0.125f)), fast::pow2i(exp - 7));
}

// Nearest E4M3FN value to x, |x| clamped to 448 (fminf: NaN gives 448); a tie takes the upper
// code only if it is even.
DS4_HD float e4m3fn_round(float x) {
  const float sign = x < 0.0f ? -1.0f : 1.0f;
  const float fx = kvsim::abs(x);
  const float ax = fx < 448.0f ? fx : 448.0f;
  int lo = 0, hi = 126;  // largest code with value <= ax
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (e4m3_value(mid) <= ax) lo = mid;
    else hi = mid - 1;
  }
  int best = lo;
  if (best < 126) {
    const float d_lo = kvsim::abs(fast::sub(ax, e4m3_value(best)));
    const float d_hi = kvsim::abs(fast::sub(ax, e4m3_value(best + 1)));
    if (d_hi < d_lo || (d_hi == d_lo && (best + 1) % 2 == 0)) best++;
  }
  return arith::mul(sign, e4m3_value(best));
}

DS4_HD float e2m1_value(int i) {
  constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return kE2M1[i];
}

// Nearest E2M1 magnitude with x's sign, |x| clamped to 6; ties to the even index.
DS4_HD float e2m1_round(float x) {
  const float sign = x < 0.0f ? -1.0f : 1.0f;
  const float fx = kvsim::abs(x);
  const float ax = fx < 6.0f ? fx : 6.0f;
  int best = 0;
  float best_diff = kvsim::abs(fast::sub(ax, e2m1_value(0)));
  for (int i = 1; i < 8; i++) {
    const float diff = kvsim::abs(fast::sub(ax, e2m1_value(i)));
    if (diff < best_diff || (diff == best_diff && i % 2 == 0 && best % 2 != 0)) {
      best = i;
      best_diff = diff;
    }
  }
  return arith::mul(sign, e2m1_value(best));
}

constexpr float kFp8Max = 448.0f, kFp8Floor = 1.0e-4f;
constexpr float kFp4Max = 6.0f, kFp4Floor = 7.052966104933725e-38f;
constexpr float kHadamardScale = 0.08838834764831845f;  // 1/sqrt(128)

// One value of a scaled block: round(clamp(x / scale, +-fmt_max)) * scale.
DS4_HD float fp8_value(float x, float scale) {
  float v = fast::div(x, scale);
  if (v > kFp8Max) v = kFp8Max;
  if (v < -kFp8Max) v = -kFp8Max;
  return arith::mul(e4m3fn_round(v), scale);
}
DS4_HD float fp4_value(float x, float scale) {
  float v = fast::div(x, scale);
  if (v > kFp4Max) v = kFp4Max;
  if (v < -kFp4Max) v = -kFp4Max;
  return arith::mul(e2m1_round(v), scale);
}

// max |x_i| from 0 (NaN never taken): exact in any order.
DS4_HD float amax_step(float amax, float x) {
  const float a = kvsim::abs(x);
  return a > amax ? a : amax;
}

}  // namespace ds4::quant::kvsim
