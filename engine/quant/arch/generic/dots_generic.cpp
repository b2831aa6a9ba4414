// The generic (portable scalar) dot kernels: the reference every architecture's kernels must
// match bit for bit (integer formats always; float formats in Order::Exact). Each follows the
// operation order documented at the top of its format's file (q8_0.cpp, q2_k.cpp, ...), which is
// antirez/ds4's CPU order. Compiled without any ISA flag; selected by Arch::Generic and used by
// every other architecture for a kernel it does not have.
#include "engine/quant/arch/generic/dots_generic.hpp"

#include "engine/quant/block_sums.hpp"

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
    const KquantSums s = q2_k_block_sums(x[i], y[i]);
    const float dall = y[i].d * f16_to_f32(x[i].d);
    const float dmin = y[i].d * f16_to_f32(x[i].dmin);
    sumf += dall * static_cast<float>(s.isum) - dmin * static_cast<float>(s.summs);
  }
  return sumf;
}

float dot_q4_k_generic(const void* w, const void* act, int64_t n) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const KquantSums s = q4_k_block_sums(x[i], y[i]);
    const float dall = y[i].d * f16_to_f32(x[i].d);
    const float dmin = y[i].d * f16_to_f32(x[i].dmin);
    sumf += dall * static_cast<float>(s.isum) - dmin * static_cast<float>(s.summs);
  }
  return sumf;
}

float dot_iq2_xxs_generic(const void* w, const void* act, int64_t n) {
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(x[i].d) * y[i].d;
    sumf += d * static_cast<float>(iq2_xxs_block_sum(x[i], y[i]));
  }
  return 0.125f * sumf;
}

float dot_mxfp4_generic(const void* w, const void* act, int64_t n) {
  const BlockMXFP4* a = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / 32; b++)
    acc += e8m0_to_f32_half(a[b].e) * x[b].d * static_cast<float>(mxfp4_block_isum(a[b], x[b]));
  return acc;
}

}  // namespace ds4::quant::detail
