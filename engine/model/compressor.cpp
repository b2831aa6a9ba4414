// Streaming KV compressor; see compressor.hpp. Order of operations follows antirez/ds4's
// compressor_decode_one / compressor_pool_decode_state.
#include "engine/model/compressor.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/compressor_pool.hpp"
#include "engine/model/kv_format.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rms_norm.hpp"

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

namespace {

// Every channel through the shared step (compressor_pool.hpp), with the mode's exp.
template <class Math>
void pool_as(CompressorState& st, float* out) {
  const auto exp = [](float x) { return Math::exp(x); };
  for (uint32_t j = 0; j < st.head_dim; j++)
    out[j] = cmp::pool_channel(st.score.data(), st.kv.data(), st.ratio, st.head_dim, st.width, j, exp);
}

}  // namespace

void compressor_pool(CompressorState& st, bool exact, float* out) {
  if (exact) pool_as<ExactMath>(st, out);
  else pool_as<FastMath>(st, out);
  compressor_roll(st);
}

void compressor_roll(CompressorState& st) {
  if (st.ratio != 4) return;
  const size_t half = size_t(st.ratio) * st.width;
  std::memcpy(st.kv.data(), st.kv.data() + half, half * sizeof(float));
  std::memcpy(st.score.data(), st.score.data() + half, half * sizeof(float));
}

namespace {

uint64_t replay_start(const CompressorState& st, uint64_t n) {
  const uint64_t w = n / st.ratio * st.ratio;
  return st.ratio == 4 ? (w >= 4 ? w - 4 : 0) : w;
}

bool holds(const CompressorHistory& h, uint64_t from, uint64_t n) { return from >= n || (from >= h.lo && n <= h.hi); }

}  // namespace

bool compressor_can_rebuild(const CompressorState& st, const CompressorHistory& hist, uint64_t base_pos, uint64_t n) {
  return holds(hist, replay_start(st, n), n) || (base_pos <= n && holds(hist, base_pos, n));
}

void compressor_rebuild(CompressorState& st, const CompressorHistory& hist, const CompressorState& base,
                        uint64_t base_pos, const uint16_t* ape, uint64_t n) {
  // Replaying from the start of the previous window (ratio 4) or of the current one
  // (ratio 128) reproduces every state row that can still be read; replaying from a saved
  // state reproduces the state exactly.
  uint64_t p0 = replay_start(st, n);
  if (holds(hist, p0, n)) {
    st.reset();
  } else if (base_pos <= n && holds(hist, base_pos, n)) {
    st = base;
    p0 = base_pos;
  } else {
    throw std::out_of_range("compressor history does not reach back to position " + std::to_string(p0));
  }
  for (uint64_t p = p0; p < n; p++)
    if (compressor_store(st, hist.kv_at(p), hist.score_at(p), ape, uint32_t(p))) compressor_roll(st);
}

void compressed_row_finish(const Exec& ex, float* row, uint32_t head_dim, const float* norm_w, float eps,
                           const RopeParams& rope, uint32_t comp_pos, CompressedRowKind kind) {
  rms_norm(ex, row, row, norm_w, head_dim, eps);
  rope_tail(row, 1, head_dim, rope, comp_pos, false, ex.exact);
  if (kind == CompressedRowKind::Attention) fp8_kv_row_inplace(row, head_dim, rope.n_rot);
  else indexer_qat_row_inplace(row, head_dim);
  for (uint32_t i = 0; i < head_dim; i++) row[i] = round_f16(row[i]);
}

}  // namespace ds4::model
