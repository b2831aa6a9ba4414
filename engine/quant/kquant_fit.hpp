#pragma once
// Internal: the scale/min search shared by the Q2_K and Q4_K weight quantizers.
#include <cstdint>

namespace ds4::quant::detail {

// Fits x[i] ≈ scale * L[i] - min with integer L[i] in [0, nmax], scale >= 0, min >= 0, minimising
// Σ (scale*L - min - x)². Tries a sweep of grid spacings around (max - min)/nmax, solves the
// least-squares scale/offset for each resulting assignment, keeps the best, then polishes by
// alternating re-assignment and re-fit. Writes L and returns {scale, min}.
struct ScaleMin {
  float scale, min;
};
ScaleMin fit_scale_min(int n, int nmax, const float* x, uint8_t* L);

// Given a fixed sub-block scale and min, the best integer levels and their squared error.
float assign_levels(int n, int nmax, const float* x, float scale, float min, uint8_t* L);

// Quantize the sub-block scales (or mins) v[0..n) to integers in [0, qmax] against a shared f16
// super-scale; returns the f16 bits of the super-scale and writes the integers to q.
uint16_t quantize_super_scale(int n, int qmax, const float* v, uint8_t* q);

}  // namespace ds4::quant::detail
