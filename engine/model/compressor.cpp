// Streaming KV compressor; see compressor.hpp. Order of operations follows antirez/ds4's
// compressor_decode_one / compressor_pool_decode_state.
#include "engine/model/compressor.hpp"

#include <cmath>
#include <cstring>

#include "engine/model/kv_format.hpp"
#include "engine/model/numerics.hpp"

namespace ds4::model {

bool compressor_store(CompressorState& st, const float* kv, const float* score, const uint16_t* ape, uint32_t pos) {
  const uint32_t pos_mod = pos % st.ratio;
  const uint32_t row = st.ratio == 4 ? st.ratio + pos_mod : pos_mod;
  float* dkv = st.kv.data() + uint64_t(row) * st.width;
  float* dsc = st.score.data() + uint64_t(row) * st.width;
  const uint16_t* ape_row = ape + uint64_t(pos_mod) * st.width;
  std::memcpy(dkv, kv, st.width * sizeof(float));
  for (uint32_t j = 0; j < st.width; j++) dsc[j] = score[j] + f16_to_f32(ape_row[j]);
  return (pos + 1) % st.ratio == 0;
}

void compressor_pool(CompressorState& st, float* out) {
  const uint32_t ratio = st.ratio, hd = st.head_dim, width = st.width;
  const float* S = st.score.data();
  const float* K = st.kv.data();
  constexpr float kNegInf = -1.0e30f;
  for (uint32_t j = 0; j < hd; j++) {
    float mx = kNegInf;
    if (ratio == 4) {
      for (uint32_t r = 0; r < ratio; r++) {
        const float sp = S[uint64_t(r) * width + j];
        const float sc = S[uint64_t(ratio + r) * width + hd + j];
        if (sp > mx) mx = sp;
        if (sc > mx) mx = sc;
      }
    } else {
      for (uint32_t r = 0; r < ratio; r++) {
        const float s = S[uint64_t(r) * width + j];
        if (s > mx) mx = s;
      }
    }
    if (mx <= kNegInf * 0.5f) {
      out[j] = 0.0f;
      continue;
    }
    float denom = 0.0f, sum = 0.0f;
    if (ratio == 4) {
      for (uint32_t r = 0; r < ratio; r++) {
        const uint64_t ip = uint64_t(r) * width + j;
        const uint64_t ic = uint64_t(ratio + r) * width + hd + j;
        const float wp = std::exp(S[ip] - mx);
        const float wc = std::exp(S[ic] - mx);
        denom += wp + wc;
        sum += wp * K[ip];
        sum += wc * K[ic];
      }
    } else {
      for (uint32_t r = 0; r < ratio; r++) {
        const uint64_t i = uint64_t(r) * width + j;
        const float w = std::exp(S[i] - mx);
        denom += w;
        sum += w * K[i];
      }
    }
    out[j] = denom > 0.0f ? sum / denom : 0.0f;
  }
  if (ratio == 4) {  // the current window becomes the previous one
    const size_t half = size_t(ratio) * width;
    std::memcpy(st.kv.data(), st.kv.data() + half, half * sizeof(float));
    std::memcpy(st.score.data(), st.score.data() + half, half * sizeof(float));
  }
}

void compressed_row_finish(float* row, uint32_t head_dim, const float* norm_w, float eps, const RopeParams& rope,
                           uint32_t comp_pos, CompressedRowKind kind) {
  const float s = rms_scale(row, head_dim, eps);
  for (uint32_t i = 0; i < head_dim; i++) row[i] = row[i] * s * norm_w[i];
  rope_tail(row, 1, head_dim, rope, comp_pos, false);
  if (kind == CompressedRowKind::Attention)
    fp8_kv_row_inplace(row, head_dim, rope.n_rot);
  else
    indexer_qat_row_inplace(row, head_dim);
  for (uint32_t i = 0; i < head_dim; i++) row[i] = round_f16(row[i]);
}

}  // namespace ds4::model
