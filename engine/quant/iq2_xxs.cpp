// IQ2_XXS: 256-element blocks of 66 bytes: f16 d, then 8 groups of 32 as two u32 each:
//   a0 = four grid indices (bytes), a1 = four 7-bit sign indices (bits 0,7,14,21) + 4-bit scale s
//   (bits 28-31). Element 32*ib + 8*l + j = db * grid[g_l].byte[j] * (±1), with
//   db = (d * (0.5f + s)) * 0.25f and the sign negative when bit j of ksigns[sidx_l] is set
//   (f32 ops in that order: GGML's dequantize_row_iq2_xxs).
//
// Dot with Q8_K (ds4.c ds4_vec_dot_iq2_xxs_q8_K, x86 path), per block i in order:
//   d = f16(x.d) * y.d
//   bsum = Σ_ib (2*s_ib + 1) * Σ_{l<4} <signed grid[g_l], q8[32ib+8l ..]>     (int32, exact)
//   sumf += d * (float)bsum
// result 0.125f * sumf. The AVX2 kernel computes each group's integer sum with SIMD and then
// performs the identical float steps, so it is bit-identical.
//
// Quantizer (plain squared error, no importance weights): for each group of 32 a search over
// group scales picks, for every 8 values, the grid point and sign pattern that fits best (an odd
// number of negative values forces one sign flip: the cheapest is taken); the group scales are
// then coded as 4-bit s against a block scale d chosen from a few candidates, re-searching the
// grid for the scale actually decoded.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/iq2_tables.hpp"

namespace ds4::quant::detail {

void dequantize_iq2_xxs(const void* src, float* dst, int64_t n) {
  const BlockIQ2_XXS* b = static_cast<const BlockIQ2_XXS*>(src);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float d = f16_to_f32(b[i].d);
    for (int ib = 0; ib < 8; ib++) {
      uint32_t aux[2];
      std::memcpy(aux, b[i].qs + 4 * ib, 8);
      const float db = d * (0.5f + static_cast<float>(aux[1] >> 28)) * 0.25f;
      for (int l = 0; l < 4; l++) {
        const uint64_t grid = kIq2xxsGrid[(aux[0] >> (8 * l)) & 255];
        const uint8_t signs = kIq2Signs.mask[(aux[1] >> (7 * l)) & 127];
        for (int j = 0; j < 8; j++) {
          const float g = static_cast<float>((grid >> (8 * j)) & 255);
          dst[i * QK_K + 32 * ib + 8 * l + j] = db * g * ((signs >> j) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

float dot_iq2_xxs_scalar(const void* w, const void* act, int64_t n) {
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

namespace {

struct GridFit {
  float err;
  uint8_t index;  // grid point
  uint8_t signs;  // 8-bit negative mask with even popcount
};

// Grid points as magnitude levels 0/1/2 (bytes 8/25/43), so a candidate's error is a sum of
// per-element table entries instead of a multiply per element.
struct GridLevels {
  uint8_t level[256][8];
  GridLevels() {
    for (int k = 0; k < 256; k++)
      for (int j = 0; j < 8; j++) {
        const int b = static_cast<int>((kIq2xxsGrid[k] >> (8 * j)) & 255);
        level[k][j] = static_cast<uint8_t>(b == 8 ? 0 : (b == 25 ? 1 : 2));
      }
  }
};
const GridLevels& grid_levels() {
  static const GridLevels t;
  return t;
}
constexpr float kMagnitudes[3] = {8.0f, 25.0f, 43.0f};

// Best grid point and signs for 8 values at group scale g (value = g * grid byte * sign).
GridFit fit_eight(const float* x, float g) {
  float err[8][3], extra[8][3];
  uint8_t neg = 0;
  for (int j = 0; j < 8; j++) {
    const float a = std::fabs(x[j]);
    if (x[j] < 0) neg |= static_cast<uint8_t>(1u << j);
    for (int l = 0; l < 3; l++) {
      const float v = g * kMagnitudes[l];
      err[j][l] = (a - v) * (a - v);
      extra[j][l] = 4.0f * a * v;  // (a+v)^2 - (a-v)^2: cost of flipping this sign
    }
  }
  const bool odd = __builtin_popcount(neg) & 1;
  const GridLevels& lv = grid_levels();
  GridFit best{INFINITY, 0, neg};
  for (int k = 0; k < 256; k++) {
    const uint8_t* L = lv.level[k];
    float e = 0;
    for (int j = 0; j < 8; j++) e += err[j][L[j]];
    if (!odd) {
      if (e < best.err) best = {e, static_cast<uint8_t>(k), neg};
      continue;
    }
    int flip = 0;
    float min_extra = extra[0][L[0]];
    for (int j = 1; j < 8; j++)
      if (extra[j][L[j]] < min_extra) min_extra = extra[j][L[j]], flip = j;
    e += min_extra;
    if (e < best.err) best = {e, static_cast<uint8_t>(k), static_cast<uint8_t>(neg ^ (1u << flip))};
  }
  return best;
}

struct GroupFit {
  float err;
  GridFit part[4];
};

GroupFit fit_group(const float* x, float g) {
  GroupFit f{0, {}};
  for (int l = 0; l < 4; l++) {
    f.part[l] = fit_eight(x + 8 * l, g);
    f.err += f.part[l].err;
  }
  return f;
}

// Least-squares group scale for the chosen grid points and signs.
float refit_scale(const float* x, const GroupFit& f) {
  double num = 0, den = 0;
  for (int l = 0; l < 4; l++) {
    const uint64_t grid = kIq2xxsGrid[f.part[l].index];
    for (int j = 0; j < 8; j++) {
      double v = static_cast<double>((grid >> (8 * j)) & 255);
      if ((f.part[l].signs >> j) & 1) v = -v;
      num += v * x[8 * l + j];
      den += v * v;
    }
  }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

// Best continuous group scale for 32 values.
float best_group_scale(const float* x) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
  if (amax == 0) return 0;
  float best_g = amax / 43.0f, best_err = INFINITY;
  constexpr int kSteps = 8;
  for (int s = 0; s <= kSteps; s++) {  // the top magnitude 43*g spans 0.5x .. 1.25x amax
    const float g = amax / 43.0f * (0.5f + 0.75f * static_cast<float>(s) / kSteps);
    const GroupFit f = fit_group(x, g);
    if (f.err < best_err) {
      best_err = f.err;
      best_g = g;
    }
  }
  const float g2 = refit_scale(x, fit_group(x, best_g));
  if (g2 > 0 && fit_group(x, g2).err < best_err) best_g = g2;
  return best_g;
}

void pack_group(BlockIQ2_XXS& y, int ib, const GroupFit& f, int s) {
  uint32_t aux[2] = {0, static_cast<uint32_t>(s) << 28};
  for (int l = 0; l < 4; l++) {
    aux[0] |= static_cast<uint32_t>(f.part[l].index) << (8 * l);
    aux[1] |= static_cast<uint32_t>(f.part[l].signs & 127) << (7 * l);
  }
  std::memcpy(y.qs + 4 * ib, aux, 8);
}

}  // namespace

void quantize_iq2_xxs(const float* src, void* dst, int64_t n) {
  BlockIQ2_XXS* out = static_cast<BlockIQ2_XXS*>(dst);
  for (int64_t i = 0; i < n / QK_K; i++) {
    const float* x = src + i * QK_K;
    BlockIQ2_XXS& y = out[i];
    std::memset(&y, 0, sizeof(y));
    float g[8], gmax = 0;
    for (int ib = 0; ib < 8; ib++) {
      g[ib] = best_group_scale(x + 32 * ib);
      gmax = std::max(gmax, g[ib]);
    }
    if (gmax == 0) continue;
    // db = d*(0.5+s)/4 with s <= 15: d0 makes the largest group scale s = 15.
    const float d0 = 4.0f * gmax / 15.5f;
    float best_err = INFINITY;
    for (const float t : {0.84f, 0.88f, 0.92f, 0.96f, 1.0f, 1.04f}) {
      const uint16_t d16 = f32_to_f16(d0 * t);
      const float d = f16_to_f32(d16);
      if (d <= 0) continue;
      BlockIQ2_XXS cand{};
      cand.d = d16;
      float err = 0;
      for (int ib = 0; ib < 8; ib++) {
        const int s0 = std::clamp(nearest_int(4.0f * g[ib] / d - 0.5f), 0, 15);
        float gerr = INFINITY;
        for (int s = std::max(0, s0 - 1); s <= std::min(15, s0 + 1); s++) {
          const float db = d * (0.5f + static_cast<float>(s)) * 0.25f;
          const GroupFit f = fit_group(x + 32 * ib, db);
          if (f.err < gerr) {
            gerr = f.err;
            pack_group(cand, ib, f, s);
          }
        }
        err += gerr;
        if (err >= best_err) break;
      }
      if (err < best_err) {
        best_err = err;
        y = cand;
      }
    }
  }
}

}  // namespace ds4::quant::detail
