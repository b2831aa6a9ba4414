#pragma once
// One layer's attention state on the device, mirroring model::LayerState (kv_state.hpp) row for
// row: the raw KV ring, the compressed attention rows, the indexer's rows (ratio 4) and the
// compressors' open windows. The counters stay on the host (they follow from the positions), the
// rows on the device. Rollback (the compressor history) is not kept on the device yet: a
// truncation there is refused (docs/cuda.md §forward).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cuda/compressor.hpp"
#include "engine/cuda/device.hpp"
#include "engine/model/kv_state.hpp"

namespace ds4::model::device {

struct DeviceLayerState {
  uint32_t ratio = 0, head_dim = 0, raw_cap = 0, raw_window = 0, n_raw = 0, raw_head = 0;
  cuda::DeviceBuffer raw;  // raw_cap x head_dim
  uint32_t comp_dim = 0, comp_cap = 0, comp_n = 0, index_dim = 0, index_n = 0;
  cuda::DeviceBuffer comp, index_comp;  // comp_cap rows each
  std::unique_ptr<cuda::DeviceCompressor> attn_cmp, index_cmp;

  // Sized as `shape` (a fresh make_layer_states entry) is: its capacities, nothing of its rows.
  explicit DeviceLayerState(const LayerState& shape);

  // The device address of the slot for the newest raw row (evicting the oldest when full), as
  // LayerState::push_raw_slot picks it.
  uint64_t push_raw_slot();
  uint32_t n_visible_raw() const { return n_raw < raw_window ? n_raw : raw_window; }
  uint64_t visible_raw_row(uint32_t i) const;
  // The next compressed rows' addresses; throw std::length_error past the capacity.
  uint64_t append_comp();
  uint64_t append_index();

  // The CPU state's rows and counters onto the device (a context restored or prefilled on the
  // CPU continues here), and back. Both throw std::invalid_argument when the shapes differ.
  void upload(const LayerState& from);
  void download(LayerState& to) const;
};

std::vector<DeviceLayerState> make_device_states(const std::vector<LayerState>& shapes);

}  // namespace ds4::model::device
