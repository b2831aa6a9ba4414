// The generic Fast-order dot kernels: the reference of docs/arithmetic.md §quantized-dot and
// §float-dot that every architecture's Fast kernels (and the CUDA backend) must match bit for
// bit. Each is the format's exact integer block sums (block_sums.hpp) entered into eight slice
// accumulators by the block updates of fast_order.hpp, then the pairwise tree. Written for
// clarity, not speed: slice by slice, block by block. Compiled without any ISA flag.
#include "engine/quant/arch/generic/block_sums.hpp"
#include "engine/quant/arch/generic/dots_generic.hpp"
#include "engine/quant/fast_order.hpp"

namespace ds4::quant::detail {
namespace {

// Runs update(acc, b) for every block b of every slice (slice s: blocks s, s + 8, ...), in the
// contract's order, and returns the tree of the slice partials.
template <class Update>
float sliced(int64_t nb, Update update) {
  float acc[fast::kSlices];
  for (int s = 0; s < fast::kSlices; s++) {
    acc[s] = 0.0f;
    for (int64_t b = s; b < nb; b += fast::kSlices) acc[s] = update(acc[s], b);
  }
  return fast::tree(acc);
}

// Float formats: w converted exactly to f32 by `load`, products in blocks of 32 by the tree.
template <class Load>
float float_dot(Load load, const float* x, int64_t n) {
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  return sliced(nb, [&](float acc, int64_t b) {
    float p[fast::kFloatBlock];
    for (int i = 0; i < fast::kFloatBlock; i++) {
      const int64_t k = b * fast::kFloatBlock + i;
      p[i] = k < n ? arith::mul(load(k), x[k]) : 0.0f;
    }
    return arith::add(acc, fast::block_tree32(p));
  });
}

}  // namespace

float dot_f32_fast_generic(const void* w, const void* act, int64_t n) {
  const float* a = static_cast<const float*>(w);
  return float_dot([a](int64_t k) { return a[k]; }, static_cast<const float*>(act), n);
}

float dot_f16_fast_generic(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  return float_dot([h](int64_t k) { return f16_to_f32(h[k]); }, static_cast<const float*>(act), n);
}

float dot_bf16_fast_generic(const void* w, const void* act, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  return float_dot([h](int64_t k) { return bf16_to_f32(h[k]); }, static_cast<const float*>(act), n);
}

float dot_q8_0_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  return sliced(n / 32, [&](float acc, int64_t b) {
    return fast::blocks32_update(acc, f16_to_f32(a[b].d), x[b].d, arith::q8_0_block_isum(a[b].qs, x[b].qs));
  });
}

float dot_mxfp4_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockMXFP4* a = static_cast<const BlockMXFP4*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  return sliced(n / 32, [&](float acc, int64_t b) {
    return fast::blocks32_update(acc, e8m0_to_f32_half(a[b].e), x[b].d, mxfp4_block_isum(a[b], x[b]));
  });
}

float dot_q2_k_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockQ2_K* x = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  return sliced(n / QK_K, [&](float acc, int64_t i) {
    const KquantSums s = q2_k_block_sums(x[i], y[i]);
    return fast::kquant_update(acc, y[i].d, f16_to_f32(x[i].d), f16_to_f32(x[i].dmin), s.isum, s.summs);
  });
}

float dot_q4_k_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockQ4_K* x = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  return sliced(n / QK_K, [&](float acc, int64_t i) {
    const KquantSums s = q4_k_block_sums(x[i], y[i]);
    return fast::kquant_update(acc, y[i].d, f16_to_f32(x[i].d), f16_to_f32(x[i].dmin), s.isum, s.summs);
  });
}

float dot_iq2_xxs_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockIQ2_XXS* x = static_cast<const BlockIQ2_XXS*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(act);
  return fast::iq2_xxs_finish(sliced(n / QK_K, [&](float acc, int64_t i) {
    return fast::iq2_xxs_update(acc, f16_to_f32(x[i].d), y[i].d, iq2_xxs_block_sum(x[i], y[i]));
  }));
}

}  // namespace ds4::quant::detail
