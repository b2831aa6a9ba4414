// The generic (portable scalar) dot kernels: the reference every architecture's kernels must
// match bit for bit (integer formats always; float formats in Order::Exact). Each follows the
// operation order documented at the top of its format's file (q8_0.cpp, q2_k.cpp, ...), which is
// antirez/ds4's CPU order. Compiled without any ISA flag; selected by Arch::Generic and used by
// every other architecture for a kernel it does not have.
#include "engine/quant/arch/generic/dots_generic.hpp"

#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

float dot_f32_generic(const void* w, const void* act, int64_t n) {
  const float* a = static_cast<const float*>(w);
  const float* x = static_cast<const float*>(act);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++) acc += static_cast<double>(a[i]) * static_cast<double>(x[i]);
  return static_cast<float>(acc);
}

float dot_f16_generic(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  const float* x = static_cast<const float*>(act);
  float acc = 0.0f;  // block_arith.hpp: the same steps the CUDA F16 matvec takes
  for (int64_t i = 0; i < n; i++) acc = arith::accumulate(acc, arith::f16_term(h[i], x[i]));
  return acc;
}

float dot_bf16_generic(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  const float* x = static_cast<const float*>(act);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++) acc += bf16_to_f32(h[i]) * x[i];
  return acc;
}

float dot_q8_0_generic(const void* w, const void* act, int64_t n) {
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  float acc = 0.0f;  // block_arith.hpp: the same steps the CUDA Q8_0 matvec takes
  for (int64_t b = 0; b < n / 32; b++)
    acc = arith::accumulate(acc, arith::q8_0_block_term(a[b].d, x[b].d, arith::q8_0_block_isum(a[b].qs, x[b].qs)));
  return acc;
}

float dot_q2_k_generic(const void* w, const void* act, int64_t n) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const uint8_t* sc = x[i].scales;
    int summs = 0;
    for (int j = 0; j < 16; j++) summs += y[i].bsums[j] * (sc[j] >> 4);
    const float dall = y[i].d * f16_to_f32(x[i].d);
    const float dmin = y[i].d * f16_to_f32(x[i].dmin);
    int isum = 0;
    const uint8_t* q2 = x[i].qs;
    const int8_t* q8 = y[i].qs;
    int is = 0;
    for (int half = 0; half < 2; half++) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; part++) {  // 16 elements each, two sub-blocks per shift
          int s = 0;
          for (int l = 0; l < 16; l++) s += q8[l] * ((q2[part * 16 + l] >> shift) & 3);
          isum += (sc[is++] & 15) * s;
          q8 += 16;
        }
      }
      q2 += 32;
    }
    sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sumf;
}

float dot_q4_k_generic(const void* w, const void* act, int64_t n) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    int summs = 0, isum = 0;
    uint8_t sc8[8], m8[8];
    unpack_q4_k_scales(x[i].scales, sc8, m8);
    for (int j = 0; j < 8; j++) {
      const int sc = sc8[j], m = m8[j];
      summs += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
      const uint8_t* q = x[i].qs + 32 * (j / 2);
      const int shift = (j % 2) * 4;
      const int8_t* q8 = y[i].qs + 32 * j;
      int s = 0;
      for (int l = 0; l < 32; l++) s += q8[l] * ((q[l] >> shift) & 15);
      isum += sc * s;
    }
    const float dall = y[i].d * f16_to_f32(x[i].d);
    const float dmin = y[i].d * f16_to_f32(x[i].dmin);
    sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  return sumf;
}

float dot_iq2_xxs_generic(const void* w, const void* act, int64_t n) {
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(x[i].d) * y[i].d;
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ib++) {
      uint32_t aux[2];
      std::memcpy(aux, x[i].qs + 4 * ib, 8);
      int32_t sumi = 0;
      for (int l = 0; l < 4; l++) {
        const uint64_t grid = kIq2xxsGrid[(aux[0] >> (8 * l)) & 255];
        const uint8_t signs = kIq2Signs.mask[(aux[1] >> (7 * l)) & 127];
        for (int j = 0; j < 8; j++) {
          const int g = static_cast<int>((grid >> (8 * j)) & 255);
          sumi += ((signs >> j) & 1 ? -g : g) * q8[j];
        }
        q8 += 8;
      }
      bsum += sumi * static_cast<int32_t>(2 * (aux[1] >> 28) + 1);
    }
    sumf += d * static_cast<float>(bsum);
  }
  return 0.125f * sumf;
}

float dot_mxfp4_generic(const void* w, const void* act, int64_t n) {
  const BlockMXFP4* a = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 32; b++) {
    int32_t isum = 0;
    for (int j = 0; j < 16; j++) {
      isum += kMxfp4Values[a[b].qs[j] & 15] * x[b].qs[j];
      isum += kMxfp4Values[a[b].qs[j] >> 4] * x[b].qs[j + 16];
    }
    acc += e8m0_to_f32_half(a[b].e) * x[b].d * static_cast<float>(isum);
  }
  return acc;
}

}  // namespace ds4::quant::detail
