// RMSNorm in both arithmetic modes; see rms_norm.hpp.
#include "engine/model/rms_norm.hpp"

#include <cmath>

#include "engine/model/numerics.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::model {

float rms_scale(const Exec& ex, const float* x, uint64_t n, float eps) {
  if (ex.exact) return model::rms_scale(x, n, eps);
  const float ss = quant::dot(quant::Type::F32, x, x, int64_t(n), ex.isa);
  const float mean = ss / float(n);
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
