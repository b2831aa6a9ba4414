#pragma once
// Internal: the AArch64 multi-activation integer dots (quant.hpp DotMultiFn): one weight row
// against up to eight activation rows at a time, the weight block decoded once (levels, grid
// points, signs, scales into registers) and then applied to every row. For each row the integer
// sums are the single-row kernel's (int_dots.hpp) and go, block by block in ascending order, to
// that row's float-order policy (block_orders.hpp: SerialSum for Order::Exact, SlicedSum for
// Order::Fast), so out[t] is bit-identical to the single-row dot of the same order and to the
// generic one (Q8_0 and MXFP4 in the Fast order run the rows as vector lanes instead:
// dot_blocks32_multi_fast, the same operations). Like int_dots.hpp it is instantiated with the
// plain NEON policy (dots_neon.cpp) and the SDOT policy (dots_dotprod.cpp); everything here has
// internal linkage.
#include <arm_neon.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "engine/quant/arch/arm/int_dots.hpp"

namespace ds4::quant::detail::arm {
namespace {

constexpr int kMultiRows = 8;  // activation rows per pass (their float sums stay in registers)

// Block `b` of activation row `t` (rows `stride` bytes apart from `act0`).
template <class B>
const B& act_block(const uint8_t* act0, size_t stride, int t, int64_t b) {
  return reinterpret_cast<const B*>(act0 + static_cast<size_t>(t) * stride)[b];
}

// Runs `pass(act0, nt, sums)` over the activation rows in passes of up to kMultiRows, one order
// policy Sum per row, and stores each row's result() into out.
template <class Sum, class Pass>
void for_row_passes(const void* act, size_t stride, int n_act, float* out, Pass&& pass) {
  for (int t0 = 0; t0 < n_act; t0 += kMultiRows) {
    const int nt = n_act - t0 < kMultiRows ? n_act - t0 : kMultiRows;
    Sum sums[kMultiRows];
    pass(static_cast<const uint8_t*>(act) + static_cast<size_t>(t0) * stride, nt, sums);
    for (int t = 0; t < nt; t++) out[t0 + t] = sums[t].result();
  }
}

// The Fast order of Q8_0 and MXFP4 for up to eight activation rows, vectorised across the rows:
// lane k of vector v belongs to row 4v + k, each slice has its own vectors, blocks go in
// ascending order to their slice's vectors (slice b mod 8) with one vfmaq_f32 (fast::blocks32_update per
// lane), and the slice tree runs lane-wise -- per row, the steps of SlicedSum. Lanes past the
// last row repeat it and are dropped; a pass of one row runs the single-row kernel.
template <class D, class W>
void dot_blocks32_multi_fast(const W& values, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  for (int t0 = 0; t0 < n_act; t0 += kMultiRows) {
    const int nt = n_act - t0 < kMultiRows ? n_act - t0 : kMultiRows;
    const uint8_t* act0 = static_cast<const uint8_t*>(act) + static_cast<size_t>(t0) * stride;
    if (nt == 1) {
      out[t0] = dot_blocks32_fast<D>(values, &act_block<BlockQ8_0Act>(act0, stride, 0, 0), nb);
      continue;
    }
    const int nv = nt > 4 ? 2 : 1;  // vectors of four rows
    const BlockQ8_0Act* x[kMultiRows];
    for (int t = 0; t < kMultiRows; t++) x[t] = &act_block<BlockQ8_0Act>(act0, stride, t < nt ? t : nt - 1, 0);
    float32x4_t acc[2][fast::kSlices];
    for (auto& row : acc)
      for (float32x4_t& a : row) a = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {  // in row order; block b goes to slice b mod 8
      const int s = fast::slice_of(b);
      {
        int8x16_t lo, hi;
        const float32x4_t scale = vdupq_n_f32(values(b, lo, hi));
        for (int v = 0; v < nv; v++) {
          int32x4_t p[4];
          float dx[4];
          for (int k = 0; k < 4; k++) {
            p[k] = block32_dot<D>(lo, hi, x[4 * v + k][b]);
            dx[k] = x[4 * v + k][b].d;
          }
          const float32x4_t isum = vcvtq_f32_s32(sums4(p[0], p[1], p[2], p[3]));
          acc[v][s] = vfmaq_f32(acc[v][s], vmulq_f32(scale, vld1q_f32(dx)), isum);
        }
      }
    }
    float lanes[kMultiRows];
    for (int v = 0; v < nv; v++) {
      const float32x4_t* q = acc[v];
      vst1q_f32(lanes + 4 * v, vaddq_f32(vaddq_f32(vaddq_f32(q[0], q[1]), vaddq_f32(q[2], q[3])),
                                         vaddq_f32(vaddq_f32(q[4], q[5]), vaddq_f32(q[6], q[7]))));
    }
    for (int t = 0; t < nt; t++) out[t0 + t] = lanes[t];
  }
}

// Q8_0 and MXFP4: 32 int8 weight values per block (`values` decodes them, Q8_0Values /
// Mxfp4Values of int_dots.hpp) and one scale. Fast runs the row-vectorised slices above.
template <class D, class Sum, class W>
void dot_blocks32_multi(const W& values, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  if constexpr (std::is_same_v<Sum, SlicedSum>) {
    dot_blocks32_multi_fast<D>(values, act, stride, n_act, nb, out);
  } else {
    for_row_passes<Sum>(act, stride, n_act, out, [&](const uint8_t* act0, int nt, Sum* acc) {
      for (int64_t b = 0; b < nb; b++) {
        int8x16_t lo, hi;
        const float wd = values(b, lo, hi);
        for (int t = 0; t < nt; t++) {
          const BlockQ8_0Act& x = act_block<BlockQ8_0Act>(act0, stride, t, b);
          acc[t].blocks32(b, wd, x.d, vaddvq_s32(block32_dot<D>(lo, hi, x)));
        }
      }
    });
  }
}

template <class D, class Sum>
void dot_q8_0_multi(const BlockQ8_0* w, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  dot_blocks32_multi<D, Sum>(Q8_0Values{w}, act, stride, n_act, nb, out);
}

template <class D, class Sum>
void dot_mxfp4_multi(const BlockMXFP4* w, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  dot_blocks32_multi<D, Sum>(Mxfp4Values{w}, act, stride, n_act, nb, out);
}

template <class D, class Sum>
void dot_q2_k_multi(const BlockQ2_K* x, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  for_row_passes<Sum>(act, stride, n_act, out, [&](const uint8_t* act0, int nt, Sum* sumf) {
    for (int64_t i = 0; i < nb; i++) {
      // Decode once: the sub-block mins and scales, and the 16 groups of 16 levels in the order
      // the single-row kernel takes them (half, k step of 2, then its four sub-blocks).
      const uint8x16_t sc = vld1q_u8(x[i].scales);
      const uint8x16_t mins = vshrq_n_u8(sc, 4);
      const int16x8_t m_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins)));
      const int16x8_t m_hi = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(mins)));
      uint8_t scb[16];
      vst1q_u8(scb, vandq_u8(sc, vdupq_n_u8(15)));
      int8x16_t lv[16];
      int32x4_t scv[4];
      for (int half = 0; half < 2; half++) {
        const uint8x16_t bits0 = vld1q_u8(x[i].qs + 32 * half), bits1 = vld1q_u8(x[i].qs + 32 * half + 16);
        for (int k = 0; k < 4; k += 2) {
          const int g = 4 * half + k;  // 4 groups per (half, k) pair: g*2 .. g*2+3
          lv[2 * g] = q2_levels(bits0, 2 * k);
          lv[2 * g + 1] = q2_levels(bits1, 2 * k);
          lv[2 * g + 2] = q2_levels(bits0, 2 * k + 2);
          lv[2 * g + 3] = q2_levels(bits1, 2 * k + 2);
          const int s = 8 * half + 2 * k;
          const int32_t four[4] = {scb[s], scb[s + 1], scb[s + 2], scb[s + 3]};
          scv[g / 2] = vld1q_s32(four);
        }
      }
      const float xd = f16_to_f32(x[i].d), xdmin = f16_to_f32(x[i].dmin);
      for (int t = 0; t < nt; t++) {
        const BlockQ8_K& y = act_block<BlockQ8_K>(act0, stride, t, i);
        const int16x8_t b_lo = vld1q_s16(y.bsums), b_hi = vld1q_s16(y.bsums + 8);
        int32x4_t sm = vmull_s16(vget_low_s16(b_lo), vget_low_s16(m_lo));
        sm = vmlal_s16(sm, vget_high_s16(b_lo), vget_high_s16(m_lo));
        sm = vmlal_s16(sm, vget_low_s16(b_hi), vget_low_s16(m_hi));
        sm = vmlal_s16(sm, vget_high_s16(b_hi), vget_high_s16(m_hi));
        const int summs = vaddvq_s32(sm);
        int32x4_t isum_v = vdupq_n_s32(0);
        const int8_t* q8 = y.qs;
        for (int q = 0; q < 4; q++) {
          const int32x4_t z = vdupq_n_s32(0);
          const int32x4_t p0 = D::dot16(z, lv[4 * q], vld1q_s8(q8));
          const int32x4_t p1 = D::dot16(z, lv[4 * q + 1], vld1q_s8(q8 + 16));
          const int32x4_t p2 = D::dot16(z, lv[4 * q + 2], vld1q_s8(q8 + 32));
          const int32x4_t p3 = D::dot16(z, lv[4 * q + 3], vld1q_s8(q8 + 48));
          isum_v = vmlaq_s32(isum_v, sums4(p0, p1, p2, p3), scv[q]);
          q8 += 64;
        }
        sumf[t].kquant(i, y.d, xd, xdmin, vaddvq_s32(isum_v), summs);
      }
    }
  });
}

template <class D, class Sum>
void dot_q4_k_multi(const BlockQ4_K* x, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  for_row_passes<Sum>(act, stride, n_act, out, [&](const uint8_t* act0, int nt, Sum* sumf) {
    for (int64_t i = 0; i < nb; i++) {
      // Decode once: scales and mins, and the 16 groups of 16 nibbles (chunk c: low nibbles of
      // both halves, then high nibbles).
      uint8_t sc8[8], m8[8];
      unpack_q4_k_scales(x[i].scales, sc8, m8);
      const int16x8_t mv = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m8)));
      const int32x4_t sc_lo = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vld1_u8(sc8)))));
      const int32x4_t sc_hi = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(vmovl_u8(vld1_u8(sc8)))));
      int8x16_t lv[16];
      for (int c = 0; c < 4; c++) {
        const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * c), b1 = vld1q_u8(x[i].qs + 32 * c + 16);
        lv[4 * c] = vreinterpretq_s8_u8(vandq_u8(b0, m4));
        lv[4 * c + 1] = vreinterpretq_s8_u8(vandq_u8(b1, m4));
        lv[4 * c + 2] = vreinterpretq_s8_u8(vshrq_n_u8(b0, 4));
        lv[4 * c + 3] = vreinterpretq_s8_u8(vshrq_n_u8(b1, 4));
      }
      const float xd = f16_to_f32(x[i].d), xdmin = f16_to_f32(x[i].dmin);
      for (int t = 0; t < nt; t++) {
        const BlockQ8_K& y = act_block<BlockQ8_K>(act0, stride, t, i);
        const int16x8_t pairs = vpaddq_s16(vld1q_s16(y.bsums), vld1q_s16(y.bsums + 8));
        int32x4_t sm = vmull_s16(vget_low_s16(pairs), vget_low_s16(mv));
        sm = vmlal_s16(sm, vget_high_s16(pairs), vget_high_s16(mv));
        const int summs = vaddvq_s32(sm);
        int32x4_t p[8];
        const int8_t* q8 = y.qs;
        for (int c = 0; c < 4; c++) {
          const int32x4_t z = vdupq_n_s32(0);
          p[2 * c] = D::dot16(D::dot16(z, lv[4 * c], vld1q_s8(q8)), lv[4 * c + 1], vld1q_s8(q8 + 16));
          p[2 * c + 1] = D::dot16(D::dot16(z, lv[4 * c + 2], vld1q_s8(q8 + 32)), lv[4 * c + 3], vld1q_s8(q8 + 48));
          q8 += 64;
        }
        const int32x4_t iv =
            vmlaq_s32(vmulq_s32(sums4(p[0], p[1], p[2], p[3]), sc_lo), sums4(p[4], p[5], p[6], p[7]), sc_hi);
        sumf[t].kquant(i, y.d, xd, xdmin, vaddvq_s32(iv), summs);
      }
    }
  });
}

template <class D, class Sum>
void dot_iq2_xxs_multi(const BlockIQ2_XXS* x, const void* act, size_t stride, int n_act, int64_t nb, float* out) {
  for_row_passes<Sum>(act, stride, n_act, out, [&](const uint8_t* act0, int nt, Sum* sumf) {
    for (int64_t i = 0; i < nb; i++) {
      // Decode once: the signed grid values of the 8 groups of 32 and their odd scales.
      int8x16_t gv[16];
      int32_t scale[8];
      for (int ib = 0; ib < 8; ib++) {
        uint32_t aux[2];
        std::memcpy(aux, x[i].qs + 4 * ib, 8);
        gv[2 * ib] = iq2_pair(aux[0] & 255, aux[1] & 127, (aux[0] >> 8) & 255, (aux[1] >> 7) & 127);
        gv[2 * ib + 1] = iq2_pair((aux[0] >> 16) & 255, (aux[1] >> 14) & 127, aux[0] >> 24, (aux[1] >> 21) & 127);
        scale[ib] = static_cast<int32_t>(2 * (aux[1] >> 28) + 1);
      }
      const float xd = f16_to_f32(x[i].d);
      for (int t = 0; t < nt; t++) {
        const BlockQ8_K& y = act_block<BlockQ8_K>(act0, stride, t, i);
        const int8_t* q8 = y.qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
          int32x4_t s = D::dot16(vdupq_n_s32(0), gv[2 * ib], vld1q_s8(q8));
          s = D::dot16(s, gv[2 * ib + 1], vld1q_s8(q8 + 16));
          q8 += 32;
          bsum += vaddvq_s32(s) * scale[ib];
        }
        sumf[t].iq2_xxs(i, xd, y.d, bsum);
      }
    }
  });
  for (int t = 0; t < n_act; t++) out[t] = 0.125f * out[t];
}

}  // namespace
}  // namespace ds4::quant::detail::arm

// Defines dot_<format>_multi_<suffix> (Order::Exact) and dot_<format>_multi_fast_<suffix>
// (Order::Fast) for the five integer formats with int8 dot policy D.
#define DS4_ARM_DEFINE_INT_DOT_MULTI(format, Block, per_block, suffix, D) \
  void dot_##format##_multi_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, \
                                     float* out) { \
    arm::dot_##format##_multi<D, SerialSum>(static_cast<const Block*>(w), act, stride, n_act, n / per_block, out); \
  } \
  void dot_##format##_multi_fast_##suffix(const void* w, const void* act, size_t stride, int n_act, int64_t n, \
                                          float* out) { \
    arm::dot_##format##_multi<D, SlicedSum>(static_cast<const Block*>(w), act, stride, n_act, n / per_block, out); \
  }
#define DS4_ARM_DEFINE_INT_DOTS_MULTI(suffix, D) \
  namespace ds4::quant::detail { \
  DS4_ARM_DEFINE_INT_DOT_MULTI(q8_0, BlockQ8_0, 32, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT_MULTI(mxfp4, BlockMXFP4, 32, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT_MULTI(q2_k, BlockQ2_K, QK_K, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT_MULTI(q4_k, BlockQ4_K, QK_K, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT_MULTI(iq2_xxs, BlockIQ2_XXS, QK_K, suffix, D) \
  }
