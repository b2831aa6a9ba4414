#pragma once
// Internal: the AArch64 integer-format dots, written once and instantiated twice -- with a plain
// NEON int8 dot (dots_neon.cpp) and with SDOT (dots_dotprod.cpp, compiled with +dotprod). The
// policy D supplies `int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)`: acc plus the 16
// products a[i]*b[i], spread over the four lanes in any way (only their total is used).
// Every integer sum is exact (int32), so the order in which lanes add up does not matter. Each
// kernel body is also templated on the float order (block_orders.hpp: SerialSum = Order::Exact,
// SlicedSum = Order::Fast), to which it hands every block's exact integer sums in ascending block
// order, so one body gives both orders, each bit-identical to the generic kernel of that order
// (dots_generic.cpp, dots_fast_generic.cpp). Q8_0 and MXFP4 in the Fast order run their eight
// slices as the lanes of two float32x4_t instead (dot_blocks32_fast: the same operations, one
// vector FMA per four blocks). Everything here has internal linkage: the two including files are
// compiled with different ISA flags.
#include <arm_neon.h>

#include <cstring>
#include <type_traits>

#include "engine/quant/arch/block_orders.hpp"
#include "engine/quant/blocks.hpp"
#include "engine/quant/fast_order.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail::arm {
namespace {

// [Σ a, Σ b, Σ c, Σ d] of four int32x4 vectors.
inline int32x4_t sums4(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

// Q8_0 and MXFP4 weights: the 32 int8 values of block b (lo: elements 0..15, hi: 16..31) and
// the block's scale as f32 (f16 d, or E8M0 / 2: both exact).
struct Q8_0Values {
  const BlockQ8_0* w;
  float operator()(int64_t b, int8x16_t& lo, int8x16_t& hi) const {
    lo = vld1q_s8(w[b].qs);
    hi = vld1q_s8(w[b].qs + 16);
    return f16_to_f32(w[b].d);
  }
};
struct Mxfp4Values {
  const BlockMXFP4* w;
  int8x16_t table = vld1q_s8(kMxfp4Values);
  float operator()(int64_t b, int8x16_t& lo, int8x16_t& hi) const {
    const uint8x16_t q = vld1q_u8(w[b].qs);
    lo = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0f)));
    hi = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
    return e8m0_to_f32_half(w[b].e);
  }
};

// <weight block, activation block> of a 32-element format, exact, spread over four lanes.
template <class D>
int32x4_t block32_dot(int8x16_t lo, int8x16_t hi, const BlockQ8_0Act& x) {
  return D::dot16(D::dot16(vdupq_n_s32(0), lo, vld1q_s8(x.qs)), hi, vld1q_s8(x.qs + 16));
}

// Fast order, vectorised (docs/arithmetic.md §slices): block b belongs to slice b mod 8, and
// slices 0..3 are the lanes of acc[0], 4..7 those of acc[1], so step i takes blocks 8i..8i+7 in
// row order and one vfmaq_f32 per vector does fast::blocks32_update in every lane:
// fma(fl(scale*dx), float(isum), acc) (SCVTF rounds to nearest even like i2f). Past the row's
// end (the last step when 8 does not divide nb) a lane gets scale and dx 0 on a stand-in block,
// and fma(+0, isum, acc) leaves its accumulator unchanged (isum is finite; acc is never -0: it
// starts at +0 and x + -x rounds to +0). The lanes then meet in fast::tree.
template <class D, class W>
float dot_blocks32_fast(const W& values, const BlockQ8_0Act* x, int64_t nb) {
  float32x4_t acc[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
    for (int h = 0; h < 2; h++) {
      int32x4_t p[4];
      float scale[4], dx[4];
      for (int k = 0; k < 4; k++) {
        const int64_t want = b0 + 4 * h + k;
        const bool live = want < nb;
        const int64_t b = live ? want : b0;  // any real block stands in
        int8x16_t lo, hi;
        const float sc = values(b, lo, hi);
        p[k] = block32_dot<D>(lo, hi, x[b]);
        scale[k] = live ? sc : 0.0f;
        dx[k] = live ? x[b].d : 0.0f;
      }
      const float32x4_t isum = vcvtq_f32_s32(sums4(p[0], p[1], p[2], p[3]));
      acc[h] = vfmaq_f32(acc[h], vmulq_f32(vld1q_f32(scale), vld1q_f32(dx)), isum);
    }
  }
  float lanes[fast::kSlices];
  vst1q_f32(lanes, acc[0]);
  vst1q_f32(lanes + 4, acc[1]);
  return fast::tree(lanes);
}

// Either order for a 32-element format: Exact hands each block to SerialSum; Fast runs the
// vectorised slices above, which compute what SlicedSum would.
template <class D, class Sum, class W>
float dot_blocks32(const W& values, const BlockQ8_0Act* x, int64_t nb) {
  if constexpr (std::is_same_v<Sum, SlicedSum>) {
    return dot_blocks32_fast<D>(values, x, nb);
  } else {
    Sum sum;
    for (int64_t b = 0; b < nb; b++) {
      int8x16_t lo, hi;
      const float sc = values(b, lo, hi);
      sum.blocks32(b, sc, x[b].d, vaddvq_s32(block32_dot<D>(lo, hi, x[b])));
    }
    return sum.result();
  }
}

template <class D, class Sum>
float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0Act* x, int64_t nb) {
  return dot_blocks32<D, Sum>(Q8_0Values{w}, x, nb);
}

template <class D, class Sum>
float dot_mxfp4(const BlockMXFP4* w, const BlockQ8_0Act* x, int64_t nb) {
  return dot_blocks32<D, Sum>(Mxfp4Values{w}, x, nb);
}

// Q2_K levels of one 16-byte group at bit offset `shift` (0, 2, 4, 6) as int8.
inline int8x16_t q2_levels(uint8x16_t bits, int shift) {
  return vreinterpretq_s8_u8(vandq_u8(vshlq_u8(bits, vdupq_n_s8(static_cast<int8_t>(-shift))), vdupq_n_u8(3)));
}

template <class D, class Sum>
float dot_q2_k(const BlockQ2_K* x, const BlockQ8_K* y, int64_t nb) {
  Sum sum;
  for (int64_t i = 0; i < nb; i++) {
    const uint8x16_t sc = vld1q_u8(x[i].scales);
    // summs = Σ bsums[j] * (scales[j] >> 4)
    const uint8x16_t mins = vshrq_n_u8(sc, 4);
    const int16x8_t m_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins)));
    const int16x8_t m_hi = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(mins)));
    const int16x8_t b_lo = vld1q_s16(y[i].bsums), b_hi = vld1q_s16(y[i].bsums + 8);
    int32x4_t sm = vmull_s16(vget_low_s16(b_lo), vget_low_s16(m_lo));
    sm = vmlal_s16(sm, vget_high_s16(b_lo), vget_high_s16(m_lo));
    sm = vmlal_s16(sm, vget_low_s16(b_hi), vget_low_s16(m_hi));
    sm = vmlal_s16(sm, vget_high_s16(b_hi), vget_high_s16(m_hi));
    const int summs = vaddvq_s32(sm);
    // isum = Σ over the 16 sub-blocks (scales[s] & 15) * <q2, q8>_16, four sub-blocks at a time
    // (one shift: parts 0 and 1 of both halves' ... in storage order s = 8*half + 2*k + part).
    const uint8x16_t scl = vandq_u8(sc, vdupq_n_u8(15));
    uint8_t scb[16];
    vst1q_u8(scb, scl);
    int32x4_t isum_v = vdupq_n_s32(0);
    const int8_t* q8 = y[i].qs;
    for (int half = 0; half < 2; half++) {
      const uint8x16_t bits0 = vld1q_u8(x[i].qs + 32 * half), bits1 = vld1q_u8(x[i].qs + 32 * half + 16);
      for (int k = 0; k < 4; k += 2) {  // sub-blocks s..s+3: (k, part 0), (k, part 1), (k+1, 0), (k+1, 1)
        const int32x4_t z = vdupq_n_s32(0);
        const int32x4_t p0 = D::dot16(z, q2_levels(bits0, 2 * k), vld1q_s8(q8));
        const int32x4_t p1 = D::dot16(z, q2_levels(bits1, 2 * k), vld1q_s8(q8 + 16));
        const int32x4_t p2 = D::dot16(z, q2_levels(bits0, 2 * k + 2), vld1q_s8(q8 + 32));
        const int32x4_t p3 = D::dot16(z, q2_levels(bits1, 2 * k + 2), vld1q_s8(q8 + 48));
        const int s = 8 * half + 2 * k;
        const int32_t scv[4] = {scb[s], scb[s + 1], scb[s + 2], scb[s + 3]};
        isum_v = vmlaq_s32(isum_v, sums4(p0, p1, p2, p3), vld1q_s32(scv));
        q8 += 64;
      }
    }
    sum.kquant(i, y[i].d, f16_to_f32(x[i].d), f16_to_f32(x[i].dmin), vaddvq_s32(isum_v), summs);
  }
  return sum.result();
}

template <class D, class Sum>
float dot_q4_k(const BlockQ4_K* x, const BlockQ8_K* y, int64_t nb) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  Sum sum;
  for (int64_t i = 0; i < nb; i++) {
    uint8_t sc8[8], m8[8];
    unpack_q4_k_scales(x[i].scales, sc8, m8);
    // summs = Σ m_j * (bsums[2j] + bsums[2j+1])
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(y[i].bsums), vld1q_s16(y[i].bsums + 8));
    const int16x8_t mv = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m8)));
    int32x4_t sm = vmull_s16(vget_low_s16(pairs), vget_low_s16(mv));
    sm = vmlal_s16(sm, vget_high_s16(pairs), vget_high_s16(mv));
    const int summs = vaddvq_s32(sm);
    // isum = Σ sc_j * <q4_j, q8_j>_32; chunk c holds sub-block 2c (low nibbles), 2c+1 (high).
    int32x4_t p[8];
    const int8_t* q8 = y[i].qs;
    for (int c = 0; c < 4; c++) {
      const uint8x16_t b0 = vld1q_u8(x[i].qs + 32 * c), b1 = vld1q_u8(x[i].qs + 32 * c + 16);
      const int32x4_t z = vdupq_n_s32(0);
      p[2 * c] = D::dot16(D::dot16(z, vreinterpretq_s8_u8(vandq_u8(b0, m4)), vld1q_s8(q8)),
                          vreinterpretq_s8_u8(vandq_u8(b1, m4)), vld1q_s8(q8 + 16));
      p[2 * c + 1] = D::dot16(D::dot16(z, vreinterpretq_s8_u8(vshrq_n_u8(b0, 4)), vld1q_s8(q8 + 32)),
                              vreinterpretq_s8_u8(vshrq_n_u8(b1, 4)), vld1q_s8(q8 + 48));
      q8 += 64;
    }
    const int32x4_t sc_lo = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vld1_u8(sc8)))));
    const int32x4_t sc_hi = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(vmovl_u8(vld1_u8(sc8)))));
    const int32x4_t iv =
        vmlaq_s32(vmulq_s32(sums4(p[0], p[1], p[2], p[3]), sc_lo), sums4(p[4], p[5], p[6], p[7]), sc_hi);
    sum.kquant(i, y[i].d, f16_to_f32(x[i].d), f16_to_f32(x[i].dmin), vaddvq_s32(iv), summs);
  }
  return sum.result();
}

// Eight signed IQ2_XXS grid values for grid point g and sign index s, twice (two points).
inline int8x16_t iq2_pair(uint32_t g0, uint32_t s0, uint32_t g1, uint32_t s1) {
  const uint8x16_t grid = vcombine_u8(vcreate_u8(kIq2xxsGrid[g0]), vcreate_u8(kIq2xxsGrid[g1]));
  const int8x16_t sign =
      vcombine_s8(vcreate_s8(kIq2Signs.plus_minus_one[s0]), vcreate_s8(kIq2Signs.plus_minus_one[s1]));
  return vmulq_s8(vreinterpretq_s8_u8(grid), sign);  // |grid| <= 43: exact in int8
}

template <class D, class Sum>
float dot_iq2_xxs(const BlockIQ2_XXS* x, const BlockQ8_K* y, int64_t nb) {
  Sum sum;
  for (int64_t i = 0; i < nb; i++) {
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ib++) {
      uint32_t aux[2];
      std::memcpy(aux, x[i].qs + 4 * ib, 8);
      int32x4_t s = D::dot16(
          vdupq_n_s32(0), iq2_pair(aux[0] & 255, aux[1] & 127, (aux[0] >> 8) & 255, (aux[1] >> 7) & 127), vld1q_s8(q8));
      s = D::dot16(s, iq2_pair((aux[0] >> 16) & 255, (aux[1] >> 14) & 127, aux[0] >> 24, (aux[1] >> 21) & 127),
                   vld1q_s8(q8 + 16));
      q8 += 32;
      bsum += vaddvq_s32(s) * static_cast<int32_t>(2 * (aux[1] >> 28) + 1);
    }
    sum.iq2_xxs(i, f16_to_f32(x[i].d), y[i].d, bsum);
  }
  return 0.125f * sum.result();
}

}  // namespace
}  // namespace ds4::quant::detail::arm

// Defines dot_<format>_<suffix> (Order::Exact) and dot_<format>_fast_<suffix> (Order::Fast) for
// the five integer formats with int8 dot policy D.
#define DS4_ARM_DEFINE_INT_DOT(format, Block, Act, per_block, suffix, D) \
  float dot_##format##_##suffix(const void* w, const void* act, int64_t n) { \
    return arm::dot_##format<D, SerialSum>(static_cast<const Block*>(w), static_cast<const Act*>(act), n / per_block); \
  } \
  float dot_##format##_fast_##suffix(const void* w, const void* act, int64_t n) { \
    return arm::dot_##format<D, SlicedSum>(static_cast<const Block*>(w), static_cast<const Act*>(act), n / per_block); \
  }
#define DS4_ARM_DEFINE_INT_DOTS(suffix, D) \
  namespace ds4::quant::detail { \
  DS4_ARM_DEFINE_INT_DOT(q8_0, BlockQ8_0, BlockQ8_0Act, 32, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT(mxfp4, BlockMXFP4, BlockQ8_0Act, 32, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT(q2_k, BlockQ2_K, BlockQ8_K, QK_K, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT(q4_k, BlockQ4_K, BlockQ8_K, QK_K, suffix, D) \
  DS4_ARM_DEFINE_INT_DOT(iq2_xxs, BlockIQ2_XXS, BlockQ8_K, QK_K, suffix, D) \
  }
