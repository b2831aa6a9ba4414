// See device_kv_state.hpp.
#include "engine/model/device/device_kv_state.hpp"

#include <stdexcept>
#include <string>

namespace ds4::model::device {

DeviceLayerState::DeviceLayerState(const LayerState& s)
    : ratio(s.ratio),
      head_dim(s.head_dim),
      raw_cap(s.raw_cap),
      raw_window(s.raw_window),
      raw(size_t(s.raw_cap) * s.head_dim * sizeof(float)) {
  if (ratio == 0) return;
  comp_dim = s.comp.dim;
  comp_cap = s.comp.cap_rows;
  comp = cuda::DeviceBuffer(size_t(comp_cap) * comp_dim * sizeof(float));
  attn_cmp = std::make_unique<cuda::DeviceCompressor>(int32_t(ratio), int32_t(s.attn_cmp.head_dim));
  if (ratio == 4) {
    index_dim = s.index_comp.dim;
    index_comp = cuda::DeviceBuffer(size_t(s.index_comp.cap_rows) * index_dim * sizeof(float));
    index_cmp = std::make_unique<cuda::DeviceCompressor>(int32_t(ratio), int32_t(s.index_cmp.head_dim));
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

uint64_t DeviceLayerState::visible_raw_row(uint32_t i) const {
  const uint32_t logical = n_raw - n_visible_raw() + i;
  return raw.ptr() + uint64_t((raw_head + logical) % raw_cap) * head_dim * sizeof(float);
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
  if (ratio != 4) return;
  index_n = h.index_comp.n;
  if (index_n > 0) index_comp.upload(h.index_comp.data.data(), size_t(index_n) * index_dim * sizeof(float));
  copy_compressor_up(*index_cmp, h.index_cmp);
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
  if (ratio != 4) return;
  h.index_comp.data.resize(size_t(index_n) * index_dim);
  h.index_comp.n = index_n;
  if (index_n > 0) index_comp.download(h.index_comp.data.data(), h.index_comp.data.size() * sizeof(float));
  index_cmp->download(h.index_cmp.kv.data(), h.index_cmp.score.data());
}

std::vector<DeviceLayerState> make_device_states(const std::vector<LayerState>& shapes) {
  std::vector<DeviceLayerState> out;
  out.reserve(shapes.size());
  for (const LayerState& s : shapes) out.emplace_back(s);
  return out;
}

}  // namespace ds4::model::device
