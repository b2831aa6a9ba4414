// MXFP4: blocks of 32 E2M1 values sharing an E8M0 exponent byte (17 bytes: e, then 16 bytes of
// nibbles; element j is the low nibble of qs[j], element j+16 the high nibble). GGML stores the
// values doubled as int8 {0,1,2,3,4,6,8,12, -0,-1,...,-12} and halves the exponent instead:
// value = (float)kvalue * 2^(e-127)/2 (GGML's dequantize_row_mxfp4).
//
// ds4 does not read MXFP4 on the CPU; the dot (activation Q8_0, ds4 f32-scale layout) follows
// GGML's form: per block in order, isum = Σ kvalue*q8 (int), acc += (e8m0_half(e) * x.d) * (float)isum.
//
// Quantizer: the shared exponent is chosen among the three around floor(log2(amax)) - 2 by
// squared error, each value snapped to the nearest representable one.
#include <algorithm>
#include <cmath>

#include "engine/quant/blocks.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/table_lookup.hpp"

namespace ds4::quant::detail {

const int8_t kMxfp4Values[16] = {DS4_MXFP4_VALUES};

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
  const BlockMXFP4* b = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < n / 32; i++) {
    const float d = e8m0_to_f32_half(b[i].e);
    for (int j = 0; j < 16; j++) {
      dst[i * 32 + j] = static_cast<float>(kMxfp4Values[b[i].qs[j] & 15]) * d;
      dst[i * 32 + j + 16] = static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

namespace {
int nearest_code(float x, float d, float& err) {
  int best = 0;
  float best_err = INFINITY;
  for (int k = 0; k < 16; k++) {
    const float diff = static_cast<float>(kMxfp4Values[k]) * d - x;
    if (diff * diff < best_err) {
      best_err = diff * diff;
      best = k;
    }
  }
  err = best_err;
  return best;
}
}  // namespace

void quantize_mxfp4(const float* src, void* dst, int64_t n) {
  BlockMXFP4* y = static_cast<BlockMXFP4*>(dst);
  for (int64_t i = 0; i < n / 32; i++) {
    const float* x = src + i * 32;
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
    const int e0 = amax > 0 ? static_cast<int>(std::floor(std::log2(amax))) - 2 + 127 : 0;
    float best_err = INFINITY;
    for (int e = std::max(0, e0 - 1); e <= std::min(254, e0 + 1); e++) {
      BlockMXFP4 cand{static_cast<uint8_t>(e), {}};
      const float d = e8m0_to_f32_half(cand.e);
      float total = 0, err;
      for (int j = 0; j < 16; j++) {
        const int lo = nearest_code(x[j], d, err);
        total += err;
        const int hi = nearest_code(x[j + 16], d, err);
        total += err;
        cand.qs[j] = static_cast<uint8_t>(lo | hi << 4);
      }
      if (total < best_err) {
        best_err = total;
        y[i] = cand;
      }
    }
  }
}

}  // namespace ds4::quant::detail
