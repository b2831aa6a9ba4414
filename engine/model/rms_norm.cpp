// RMSNorm in both arithmetic modes; see rms_norm.hpp.
#include "engine/model/rms_norm.hpp"

#include <cmath>

#include "engine/model/numerics.hpp"

namespace ds4::model {

namespace {

// docs/arithmetic.md §rmsnorm: x_i^2 is exact in binary64; element i joins slice i mod 8 in
// ascending order (binary64 adds), the slices meet in the pairwise tree.
double sum_of_squares_sliced(const float* x, uint64_t n) {
  double s[8] = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) s[k] = s[k] + double(x[i + k]) * double(x[i + k]);
  for (int k = 0; i < n; i++, k++) s[k] = s[k] + double(x[i]) * double(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

float rms_scale(const Exec& ex, const float* x, uint64_t n, float eps) {
  if (ex.exact) return model::rms_scale(x, n, eps);
  const float mean = float(sum_of_squares_sliced(x, n) / double(n));
  return 1.0f / std::sqrt(mean + eps);
}

void rms_norm(const Exec& ex, float* out, const float* x, const float* w, uint64_t n, float eps) {
  const float s = rms_scale(ex, x, n, eps);
  if (w)
    for (uint64_t i = 0; i < n; i++) out[i] = x[i] * s * w[i];
  else
    for (uint64_t i = 0; i < n; i++) out[i] = x[i] * s;
}

}  // namespace ds4::model
