// The generic Fast-order dot kernels: the reference of docs/arithmetic.md §quantized-dot and
// docs/arithmetic.md §float-dot that every architecture's Fast kernels (and the CUDA backend)
// must match bit for bit. Each is the format's block step of fast_blocks.hpp (exact integer block
// sums, then the block update of fast_order.hpp) entered into eight slice accumulators, then the
// pairwise tree. Written for clarity, not speed: slice by slice, block by block. Compiled without
// any ISA flag.
#include "engine/quant/arch/generic/dots_generic.hpp"
#include "engine/quant/fast_blocks.hpp"

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

// Float formats: w converted exactly to f32 by Elem::load, products in blocks of 32 by the tree.
template <class Elem>
float float_dot(const void* w, const float* x, int64_t n) {
  const auto* a = static_cast<const typename Elem::T*>(w);
  const int64_t nb = (n + fast::kFloatBlock - 1) / fast::kFloatBlock;
  return sliced(nb, [&](float acc, int64_t b) {
    float p[fast::kFloatBlock];
    for (int i = 0; i < fast::kFloatBlock; i++) {
      const int64_t k = b * fast::kFloatBlock + i;
      p[i] = k < n ? arith::mul(Elem::load(a[k]), x[k]) : 0.0f;
    }
    return arith::add(acc, fast::block_tree32(p));
  });
}

// Quantized formats: each block's integer sums over all its units, then its update.
template <class Block>
float block_dot(const void* w, const void* act, int64_t n) {
  const auto* a = static_cast<const typename Block::Weight*>(w);
  const auto* x = static_cast<const typename Block::Act*>(act);
  return Block::finish(sliced(n / Block::kElems, [&](float acc, int64_t b) {
    return Block::update(acc, a[b], x[b], Block::sums(a[b], x[b], 0, Block::kUnits));
  }));
}

}  // namespace

float dot_f32_fast_generic(const void* w, const void* act, int64_t n) {
  return float_dot<fast::F32Elem>(w, static_cast<const float*>(act), n);
}

float dot_f16_fast_generic(const void* w, const void* act, int64_t n) {
  return float_dot<fast::F16Elem>(w, static_cast<const float*>(act), n);
}

float dot_bf16_fast_generic(const void* w, const void* act, int64_t n) {
  return float_dot<fast::Bf16Elem>(w, static_cast<const float*>(act), n);
}

float dot_q8_0_fast_generic(const void* w, const void* act, int64_t n) {
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0Act* x = static_cast<const BlockQ8_0Act*>(act);
  return sliced(n / 32, [&](float acc, int64_t b) {
    return fast::blocks32_update(acc, f16_to_f32(a[b].d), x[b].d, arith::q8_0_block_isum(a[b].qs, x[b].qs));
  });
}

float dot_mxfp4_fast_generic(const void* w, const void* act, int64_t n) {
  return block_dot<fast::Mxfp4Block>(w, act, n);
}
float dot_q2_k_fast_generic(const void* w, const void* act, int64_t n) { return block_dot<fast::Q2KBlock>(w, act, n); }
float dot_q4_k_fast_generic(const void* w, const void* act, int64_t n) { return block_dot<fast::Q4KBlock>(w, act, n); }
float dot_iq2_xxs_fast_generic(const void* w, const void* act, int64_t n) {
  return block_dot<fast::Iq2XxsBlock>(w, act, n);
}

}  // namespace ds4::quant::detail
