#pragma once
// One layer's attention state on the device, mirroring model::LayerState (kv_state.hpp) row for
// row: the raw KV ring, the compressed attention rows, the indexer's rows (ratio 4) and the
// compressors' open windows and their recent inputs (the rollback history). The counters stay on
// the host (they follow from the positions), the rows on the device. A truncation rebuilds the
// windows on the host from the downloaded history, as the CPU does (docs/cuda.md §rollback).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cuda/compressor.hpp"
#include "engine/cuda/device.hpp"
#include "engine/model/kv_state.hpp"

namespace ds4::model::device {

// model::CompressorHistory on the device: the last `cap` (kv, score) input rows by position, in
// slots pos % cap; lo and hi (positions [lo, hi) held) on the host.
struct DeviceHistory {
  uint32_t width = 0, cap = 0;
  uint64_t lo = 0, hi = 0;
  cuda::DeviceBuffer kv, score;

  void init(const CompressorHistory& shape);
  // Rows t of kv_rows and score_rows (T x width floats) as positions pos0 + t, exactly as T calls
  // of CompressorHistory::record; only the rows the ring keeps are copied. Asynchronous.
  void record(uint64_t pos0, uint32_t T, cuda::DeviceSpan kv_rows, cuda::DeviceSpan score_rows);
  void upload(const CompressorHistory& from);
  // The rows of positions [from, until) ∩ [lo, hi), and lo and hi (the ring's other slots hold
  // nothing a CPU history reads). download() takes every held row; a rollback only those it
  // replays.
  void download_rows(CompressorHistory& to, uint64_t from, uint64_t until) const;
  void download(CompressorHistory& to) const { download_rows(to, lo, hi); }
};

struct DeviceLayerState {
  uint32_t ratio = 0, head_dim = 0, raw_cap = 0, raw_window = 0, n_raw = 0, raw_head = 0;
  cuda::DeviceBuffer raw;  // raw_cap x head_dim
  uint32_t comp_dim = 0, comp_cap = 0, comp_n = 0, index_dim = 0, index_n = 0;
  cuda::DeviceBuffer comp, index_comp;  // comp_cap rows each
  std::unique_ptr<cuda::DeviceCompressor> attn_cmp, index_cmp;
  DeviceHistory attn_hist, index_hist;

  // Sized as `shape` (a fresh make_layer_states entry) is: its capacities, nothing of its rows.
  explicit DeviceLayerState(const LayerState& shape);

  // The device address of the slot for the newest raw row (evicting the oldest when full), as
  // LayerState::push_raw_slot picks it.
  uint64_t push_raw_slot();
  // The next compressed rows' addresses; throw std::length_error past the capacity.
  uint64_t append_comp();
  uint64_t append_index();

  // The CPU state's rows, history and counters onto the device (a context restored or prefilled
  // on the CPU continues here), and back; the base states (LayerState::set_base) stay on the host.
  // Both throw std::invalid_argument when the shapes differ.
  void upload(const LayerState& from);
  void download(LayerState& to) const;

  // Rollback to n tokens without moving the KV rows (docs/cuda.md §rollback): `mirror` gets this
  // state's counters and the history rows a rebuild at n can replay (base_pos is the mirror's),
  // then the CPU's truncate runs on it, then `finish_rollback` takes its counters, rebuilt
  // windows and history bounds back.
  void rollback_view(LayerState& mirror, uint64_t n) const;
  void finish_rollback(const LayerState& mirror);

  uint64_t bytes() const;
};

std::vector<DeviceLayerState> make_device_states(const std::vector<LayerState>& shapes);

}  // namespace ds4::model::device
