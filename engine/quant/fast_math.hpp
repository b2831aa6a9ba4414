#pragma once
// Internal: the transcendentals of the Fast order (docs/arithmetic.md §transcendentals), written
// once as `__host__ __device__` functions from IEEE basic operations only (no FMA, no libm), so
// every ISA and the GPU return the same bits for them; glibc's and CUDA's expf differ in the last
// bit on some inputs, and glibc picks FMA variants at run time on x86. Each operation below is one
// rounding: the host compiles with -ffp-contract=off, the device through the _rn intrinsics.
// Accuracy (tests/engine/quant/fast_math_test.cpp): exp within 1 ulp, log1p and softplus within 2,
// the RoPE sine and cosine within 1 ulp of binary32 after rounding.
#include <cstdint>
#include <cstring>

#include "engine/quant/block_arith.hpp"

namespace ds4::quant::fast {

DS4_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
DS4_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

DS4_HD bool is_nan(float x) {
#if defined(__CUDA_ARCH__)
  const uint32_t u = __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
#endif
  return (u & 0x7fffffffu) > 0x7f800000u;
}

// 2^k as a float for -126 <= k <= 127 (exact).
DS4_HD float pow2i(int k) { return arith::bits_to_f32(static_cast<uint32_t>(k + 127) << 23); }

// e^x. Reduction x = n ln2 + r with n = nearest(x / ln2) (by the 1.5 * 2^23 shift, exact in
// round-to-nearest) and ln2 split in two so that n * kLn2Hi is exact; e^r on |r| <= 0.35 by its
// Taylor polynomial to degree 7 (truncation < 6e-9 relative) in Horner form; the scaling by 2^n in
// two exact-power steps, so subnormal results round once and 2^128 overflows to inf correctly.
DS4_HD float exp(float x) {
  using arith::add;
  using arith::mul;
  if (is_nan(x)) return x;
  if (x > 88.72283935546875f) return mul(3.0e38f, 3.0e38f);  // +inf
  if (x < -103.972084045410156f) return 0.0f;                // below half the smallest subnormal
  constexpr float kShift = 12582912.0f;                      // 1.5 * 2^23
  const float n = sub(add(mul(x, 1.44269502162933349609375f), kShift), kShift);
  constexpr float kLn2Hi = 0.693359375f;  // 9 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440317344665527e-4f;
  const float r = sub(sub(x, mul(n, kLn2Hi)), mul(n, kLn2Lo));
  float q = 1.98412701e-4f;  // 1/5040
  q = add(mul(q, r), 1.38888892e-3f);
  q = add(mul(q, r), 8.33333377e-3f);
  q = add(mul(q, r), 4.16666679e-2f);
  q = add(mul(q, r), 1.66666672e-1f);
  q = add(mul(q, r), 0.5f);
  const float p = add(1.0f, add(r, mul(mul(r, r), q)));
  const int k = static_cast<int>(n);  // -150 .. 128
  const int k1 = k / 2;
  return mul(mul(p, pow2i(k1)), pow2i(k - k1));
}

// log(1 + y) for 0 <= y <= 1: 2 atanh(s) with s = y / (2 + y) <= 1/3, the odd series to s^17
// (truncation < 3e-9 relative).
DS4_HD float log1p_unit(float y) {
  using arith::add;
  using arith::mul;
  const float s = div(y, add(2.0f, y));
  const float z = mul(s, s);
  float q = 5.88235296e-2f;  // 1/17
  q = add(mul(q, z), 6.66666701e-2f);
  q = add(mul(q, z), 7.69230798e-2f);
  q = add(mul(q, z), 9.09090936e-2f);
  q = add(mul(q, z), 1.11111112e-1f);
  q = add(mul(q, z), 1.42857149e-1f);
  q = add(mul(q, z), 2.00000003e-1f);
  q = add(mul(q, z), 3.33333343e-1f);
  const float s2 = mul(2.0f, s);
  return add(s2, mul(s2, mul(z, q)));
}

// 1 / (1 + e^-z): the hyper-connection split's form.
DS4_HD float sigmoid(float z) { return div(1.0f, arith::add(1.0f, fast::exp(-z))); }

// The branching form of ds4's silu and output head: e^-x only for x >= 0, e^x / (1 + e^x) below.
DS4_HD float sigmoid_stable(float x) {
  if (x >= 0.0f) return div(1.0f, arith::add(1.0f, fast::exp(-x)));
  const float e = fast::exp(x);
  return div(e, arith::add(1.0f, e));
}

DS4_HD float silu(float x) { return arith::mul(x, sigmoid_stable(x)); }

// log(1 + e^x) with ds4's cut-offs at +-20; between them max(x, 0) + log1p(e^-|x|).
DS4_HD float softplus(float x) {
  if (x > 20.0f) return x;
  if (x < -20.0f) return fast::exp(x);
  const float a = x < 0.0f ? -x : x;
  return arith::add(x > 0.0f ? x : 0.0f, log1p_unit(fast::exp(-a)));
}

// ---- RoPE angles (docs/arithmetic.md §rope): binary64, rounded once to binary32 by the caller.

DS4_HD double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
DS4_HD double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// sin and cos of theta (0 <= theta < 2^20 pi/2, exact reduction there): theta = k pi/2 + r with
// pi/2 in three parts of at most 33 bits (k * part exact), then the Taylor series of sin to r^15
// and cos to r^16 on |r| <= pi/4 (truncation < 1e-16), and the quadrant.
DS4_HD void sincos(double theta, double* s_out, double* c_out) {
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52
  const double kd = dadd(dadd(dmul(theta, 0.63661977236758134308), kShift), -kShift);
  constexpr double kP1 = 1.57079632673412561417e+00, kP2 = 6.07710050630396597660e-11, kP3 = 2.02226624879595063154e-21;
  const double r = dadd(dadd(dadd(theta, -dmul(kd, kP1)), -dmul(kd, kP2)), -dmul(kd, kP3));
  const double z = dmul(r, r);
  double ps = -7.6471637318198164759e-13;  // -1/15!
  ps = dadd(dmul(ps, z), 1.6059043836821614599e-10);
  ps = dadd(dmul(ps, z), -2.5052108385441718775e-08);
  ps = dadd(dmul(ps, z), 2.7557319223985890653e-06);
  ps = dadd(dmul(ps, z), -1.9841269841269841270e-04);
  ps = dadd(dmul(ps, z), 8.3333333333333333333e-03);
  ps = dadd(dmul(ps, z), -1.6666666666666666667e-01);
  const double sn = dadd(r, dmul(dmul(r, z), ps));
  double pc = 4.7794773323873852974e-14;  // 1/16!
  pc = dadd(dmul(pc, z), -1.1470745597729724714e-11);
  pc = dadd(dmul(pc, z), 2.0876756987868098979e-09);
  pc = dadd(dmul(pc, z), -2.7557319223985890653e-07);
  pc = dadd(dmul(pc, z), 2.4801587301587301587e-05);
  pc = dadd(dmul(pc, z), -1.3888888888888888889e-03);
  pc = dadd(dmul(pc, z), 4.1666666666666666667e-02);
  pc = dadd(dmul(pc, z), -0.5);
  const double cs = dadd(1.0, dmul(z, pc));
  const int quadrant = static_cast<int>(static_cast<int64_t>(kd) & 3);
  const double sq = (quadrant & 1) ? cs : sn, cq = (quadrant & 1) ? sn : cs;
  *s_out = (quadrant & 2) ? -sq : sq;
  *c_out = (quadrant == 1 || quadrant == 2) ? -cq : cq;
}

}  // namespace ds4::quant::fast
