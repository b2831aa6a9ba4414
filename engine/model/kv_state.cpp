// Storage of the per-layer attention state (see kv_state.hpp).
#include "engine/model/kv_state.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ds4::model {

void CompressorState::init(uint32_t ratio_, uint32_t head_dim_) {
  ratio = ratio_;
  head_dim = head_dim_;
  coff = ratio == 4 ? 2u : 1u;
  width = coff * head_dim;
  rows = coff * ratio;
  kv.assign(uint64_t(width) * rows, 0.0f);
  score.assign(uint64_t(width) * rows, -1.0e30f);
}

void CompressorState::reset() {
  std::fill(kv.begin(), kv.end(), 0.0f);
  std::fill(score.begin(), score.end(), -1.0e30f);
}

void CompressorHistory::init(uint32_t width_, uint32_t cap_) {
  width = width_;
  cap = cap_;
  lo = hi = 0;
  kv.assign(uint64_t(width) * cap, 0.0f);
  score.assign(uint64_t(width) * cap, 0.0f);
}

void CompressorHistory::record(uint64_t pos, const float* kv_row, const float* score_row) {
  if (pos != hi) lo = pos;  // a gap: only positions from here on are known
  std::copy(kv_row, kv_row + width, kv.data() + (pos % cap) * width);
  std::copy(score_row, score_row + width, score.data() + (pos % cap) * width);
  hi = pos + 1;
  if (hi - lo > cap) lo = hi - cap;
}

float* RowStore::append() {
  if (n >= cap_rows) throw std::length_error("compressed KV store is full (" + std::to_string(cap_rows) + " rows)");
  const uint64_t need = uint64_t(n + 1) * dim;
  if (data.size() < need) {
    uint64_t rows = std::max<uint64_t>(64, uint64_t(n) * 2);
    rows = std::min<uint64_t>(rows, cap_rows);
    data.resize(rows * dim);
  }
  return data.data() + uint64_t(n++) * dim;
}

float* LayerState::push_raw_slot() {
  if (n_raw < raw_cap) {
    const uint32_t slot = (raw_head + n_raw) % raw_cap;
    n_raw++;
    return raw.data() + uint64_t(slot) * head_dim;
  }
  const uint32_t slot = raw_head;  // overwrite the oldest, which becomes the newest
  raw_head = (raw_head + 1) % raw_cap;
  return raw.data() + uint64_t(slot) * head_dim;
}

void LayerState::reset() {
  n_raw = 0;
  raw_head = 0;
  comp.clear();
  index_comp.clear();
  if (ratio != 0) attn_cmp.reset();
  if (ratio == 4) index_cmp.reset();
  attn_hist.forget(0);
  index_hist.forget(0);
  set_base(0);
}

uint64_t LayerState::bytes() const {
  return (raw.capacity() + comp.data.capacity() + index_comp.data.capacity() + attn_cmp.kv.capacity() +
          attn_cmp.score.capacity() + index_cmp.kv.capacity() + index_cmp.score.capacity() + attn_hist.kv.capacity() +
          attn_hist.score.capacity() + index_hist.kv.capacity() + index_hist.score.capacity() +
          attn_base.kv.capacity() + attn_base.score.capacity() + index_base.kv.capacity() +
          index_base.score.capacity()) *
         sizeof(float);
}

}  // namespace ds4::model
