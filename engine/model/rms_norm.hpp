#pragma once
// RMSNorm in the model's arithmetic mode. Exact: ds4's, the sum of squares in double, serial
// (numerics.hpp). Fast: docs/arithmetic.md §rmsnorm, the exact squares summed in binary64 in
// eight slices and the pairwise tree (a fixed order a GPU follows; nearly always the same mean
// as ds4's serial binary64 sum, both being within 1e-12 of the real one), then
// mean = fl32(ss / n), r = 1 / sqrt(mean + eps) and out = (x * r) * w in binary32.
#include <cstdint>

#include "engine/model/linear.hpp"

namespace ds4::model {

// 1 / sqrt(mean(x^2) + eps).
float rms_scale(const Exec& ex, const float* x, uint64_t n, float eps);

// out[i] = (x[i] * rms_scale) * w[i], or without the weight when w is null; out may be x.
void rms_norm(const Exec& ex, float* out, const float* x, const float* w, uint64_t n, float eps);

}  // namespace ds4::model
