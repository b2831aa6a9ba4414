// See device_kv_state.hpp.
#include "engine/model/device/device_kv_state.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ds4::model::device {

void DeviceHistory::init(const CompressorHistory& shape) {
  width = shape.width;
  cap = shape.cap;
  lo = hi = 0;
  kv = cuda::DeviceBuffer(size_t(cap) * width * sizeof(float));
  score = cuda::DeviceBuffer(size_t(cap) * width * sizeof(float));
}

void DeviceHistory::record(uint64_t pos0, uint32_t T, cuda::DeviceSpan kv_rows, cuda::DeviceSpan score_rows) {
  if (T == 0) return;
  if (pos0 != hi) lo = pos0;  // a gap: only positions from here on are known
  hi = pos0 + T;
  if (hi - lo > cap) lo = hi - cap;
  const size_t row = size_t(width) * sizeof(float);
  // Runs of consecutive slots, at most two per call (the ring wraps once).
  for (uint64_t p = std::max(pos0, hi - std::min<uint64_t>(hi, cap)); p < hi;) {
    const uint64_t slot = p % cap, run = std::min<uint64_t>(hi - p, cap - slot);
    const size_t from = size_t(p - pos0) * row, bytes = size_t(run) * row;
    cuda::DeviceSpan(kv).sub(size_t(slot) * row, bytes).copy_from(kv_rows.sub(from, bytes));
    cuda::DeviceSpan(score).sub(size_t(slot) * row, bytes).copy_from(score_rows.sub(from, bytes));
    p += run;
  }
}

void DeviceHistory::upload(const CompressorHistory& h) {
  if (h.width != width || h.cap != cap) throw std::invalid_argument("device KV: the compressor histories differ");
  kv.upload(h.kv.data(), h.kv.size() * sizeof(float));
  score.upload(h.score.data(), h.score.size() * sizeof(float));
  lo = h.lo;
  hi = h.hi;
}

void DeviceHistory::download_rows(CompressorHistory& h, uint64_t from, uint64_t until) const {
  if (h.width != width || h.cap != cap) throw std::invalid_argument("device KV: the compressor histories differ");
  h.lo = lo;
  h.hi = hi;
  const size_t row = size_t(width) * sizeof(float);
  for (uint64_t p = std::max(from, lo); p < std::min(until, hi);) {
    const uint64_t slot = p % cap, run = std::min<uint64_t>(std::min(until, hi) - p, cap - slot);
    kv.download(h.kv.data() + slot * width, size_t(run) * row, size_t(slot) * row);
    score.download(h.score.data() + slot * width, size_t(run) * row, size_t(slot) * row);
    p += run;
  }
}

DeviceLayerState::DeviceLayerState(const LayerState& s)
    : ratio(s.ratio),
      head_dim(s.head_dim),
      raw_cap(s.raw_cap),
      raw_window(s.raw_window),
      raw(size_t(s.raw_cap) * s.head_dim * sizeof(float)) {
  // Zeroed like the CPU's ring, so that a download before the ring is full gives the CPU's state
  // (fresh device memory holds whatever was there).
  cuda::DeviceSpan(raw).zero();
  if (ratio == 0) return;
  comp_dim = s.comp.dim;
  comp_cap = s.comp.cap_rows;
  comp = cuda::DeviceBuffer(size_t(comp_cap) * comp_dim * sizeof(float));
  attn_cmp = std::make_unique<cuda::DeviceCompressor>(int32_t(ratio), int32_t(s.attn_cmp.head_dim));
  attn_hist.init(s.attn_hist);
  if (ratio == 4) {
    index_dim = s.index_comp.dim;
    index_comp = cuda::DeviceBuffer(size_t(s.index_comp.cap_rows) * index_dim * sizeof(float));
    index_cmp = std::make_unique<cuda::DeviceCompressor>(int32_t(ratio), int32_t(s.index_cmp.head_dim));
    index_hist.init(s.index_hist);
  }
}

uint64_t DeviceLayerState::push_raw_slot() {
  uint32_t slot = raw_head;
  if (n_raw < raw_cap) {
    slot = (raw_head + n_raw) % raw_cap;
    n_raw++;
  } else {
    raw_head = (raw_head + 1) % raw_cap;  // the oldest becomes the newest
  }
  return raw.ptr() + uint64_t(slot) * head_dim * sizeof(float);
}

uint64_t DeviceLayerState::append_comp() {
  if (comp_n >= comp_cap) throw std::length_error("device KV: compressed rows past " + std::to_string(comp_cap));
  return comp.ptr() + uint64_t(comp_n++) * comp_dim * sizeof(float);
}

uint64_t DeviceLayerState::append_index() {
  if (index_n >= comp_cap) throw std::length_error("device KV: indexer rows past " + std::to_string(comp_cap));
  return index_comp.ptr() + uint64_t(index_n++) * index_dim * sizeof(float);
}

namespace {

void same_shape(const DeviceLayerState& d, const LayerState& h) {
  if (d.ratio != h.ratio || d.head_dim != h.head_dim || d.raw_cap != h.raw_cap || d.raw_window != h.raw_window ||
      (d.ratio != 0 && (d.comp_cap != h.comp.cap_rows || d.comp_dim != h.comp.dim)) ||
      (d.ratio == 4 && d.index_dim != h.index_comp.dim))
    throw std::invalid_argument("device KV: the CPU layer state has another shape");
}

void copy_compressor_up(cuda::DeviceCompressor& d, const CompressorState& h) {
  if (size_t(d.width) != h.width || size_t(d.rows) != h.rows)
    throw std::invalid_argument("device KV: the compressor windows differ");
  d.upload(h.kv.data(), h.score.data());
}

}  // namespace

void DeviceLayerState::upload(const LayerState& h) {
  same_shape(*this, h);
  raw.upload(h.raw.data(), h.raw.size() * sizeof(float));
  n_raw = h.n_raw;
  raw_head = h.raw_head;
  if (ratio == 0) return;
  comp_n = h.comp.n;
  if (comp_n > 0) comp.upload(h.comp.data.data(), size_t(comp_n) * comp_dim * sizeof(float));
  copy_compressor_up(*attn_cmp, h.attn_cmp);
  attn_hist.upload(h.attn_hist);
  if (ratio != 4) return;
  index_n = h.index_comp.n;
  if (index_n > 0) index_comp.upload(h.index_comp.data.data(), size_t(index_n) * index_dim * sizeof(float));
  copy_compressor_up(*index_cmp, h.index_cmp);
  index_hist.upload(h.index_hist);
}

void DeviceLayerState::download(LayerState& h) const {
  same_shape(*this, h);
  raw.download(h.raw.data(), h.raw.size() * sizeof(float));
  h.n_raw = n_raw;
  h.raw_head = raw_head;
  if (ratio == 0) return;
  h.comp.data.resize(size_t(comp_n) * comp_dim);
  h.comp.n = comp_n;
  if (comp_n > 0) comp.download(h.comp.data.data(), h.comp.data.size() * sizeof(float));
  attn_cmp->download(h.attn_cmp.kv.data(), h.attn_cmp.score.data());
  attn_hist.download(h.attn_hist);
  if (ratio != 4) return;
  h.index_comp.data.resize(size_t(index_n) * index_dim);
  h.index_comp.n = index_n;
  if (index_n > 0) index_comp.download(h.index_comp.data.data(), h.index_comp.data.size() * sizeof(float));
  index_cmp->download(h.index_cmp.kv.data(), h.index_cmp.score.data());
  index_hist.download(h.index_hist);
}

void DeviceLayerState::rollback_view(LayerState& h, uint64_t n) const {
  same_shape(*this, h);
  h.n_raw = n_raw;
  h.raw_head = raw_head;
  if (ratio == 0) return;
  h.comp.n = comp_n;
  // A rebuild replays from the previous window's start (at most `rows` back) or from base_pos.
  const uint64_t reach = std::min<uint64_t>(n, uint64_t(h.attn_cmp.rows));
  attn_hist.download_rows(h.attn_hist, std::min(h.base_pos, n - reach), n);
  if (ratio != 4) return;
  h.index_comp.n = index_n;
  index_hist.download_rows(h.index_hist, std::min(h.base_pos, n - reach), n);
}

void DeviceLayerState::finish_rollback(const LayerState& h) {
  same_shape(*this, h);
  n_raw = h.n_raw;
  raw_head = h.raw_head;
  if (ratio == 0) return;
  comp_n = h.comp.n;
  copy_compressor_up(*attn_cmp, h.attn_cmp);
  attn_hist.lo = h.attn_hist.lo;
  attn_hist.hi = h.attn_hist.hi;
  if (ratio != 4) return;
  index_n = h.index_comp.n;
  copy_compressor_up(*index_cmp, h.index_cmp);
  index_hist.lo = h.index_hist.lo;
  index_hist.hi = h.index_hist.hi;
}

uint64_t DeviceLayerState::bytes() const {
  uint64_t b = raw.bytes() + comp.bytes() + index_comp.bytes() + attn_hist.kv.bytes() + attn_hist.score.bytes() +
               index_hist.kv.bytes() + index_hist.score.bytes();
  if (attn_cmp) b += attn_cmp->kv.bytes() + attn_cmp->score.bytes();
  if (index_cmp) b += index_cmp->kv.bytes() + index_cmp->score.bytes();
  return b;
}

std::vector<DeviceLayerState> make_device_states(const std::vector<LayerState>& shapes) {
  std::vector<DeviceLayerState> out;
  out.reserve(shapes.size());
  for (const LayerState& s : shapes) out.emplace_back(s);
  return out;
}

}  // namespace ds4::model::device
