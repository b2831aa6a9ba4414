#pragma once
// Internal: the scale/min search shared by the Q2_K and Q4_K weight quantizers (and the
// importance weights the weighted quantizers of Q2_K, Q4_K and IQ2_XXS use). The formats
// differ only in geometry (sub-block count and length, level and scale ranges) and in how they
// pack the results, so fit_super_block does the whole search and the format files only pack.
#include <cstdint>

namespace ds4::quant::detail {

// One K-quant super-block: x holds n_sub sub-blocks of sub_len values. Fits each sub-block's
// (scale, min) with levels in [0, nmax], quantizes the scales and the mins to integers in
// [0, qmax] against two f16 super-scales, then refines each sub-block's integer scale and min
// among the neighbours of the rounded values with the levels re-chosen against the decoded values
// (the decoder computes (d*sc)*q - (dmin*m) in f32). Writes the integer scales ls[n_sub], mins
// lm[n_sub] and levels L[n_sub * sub_len]; returns the f16 bits of d and dmin.
struct SuperScales {
  uint16_t d, dmin;
};
// w: per-element importance weights of the block (element_weights), or null for the plain fit.
SuperScales fit_super_block(const float* x, int n_sub, int sub_len, int nmax, int qmax, uint8_t* ls, uint8_t* lm,
                            uint8_t* L, const float* w = nullptr);

// The per-element weights the weighted quantizers fit with (GGML's choice for its imatrix
// quantizers, docs/quant.md §importance-weighted-quantization): w_i = importance_i *
// sqrt(sigma2 + x_i²), sigma2 = sigma2_factor * mean(x²) over the n values of the block, so
// that within a column of equal importance the larger weights count somewhat more.
void element_weights(const float* x, const float* importance, int n, float sigma2_factor, float* w);

}  // namespace ds4::quant::detail
