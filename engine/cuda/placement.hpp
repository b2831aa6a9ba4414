#pragma once
// Where the weights live for the GPU (docs/cuda.md §placement). A unified-memory device (GB10)
// reads the mapped GGUF in place through a host registration: no copy, no second 81 GiB. A
// discrete device (H100/H200) gets a copy in its own memory when weights, device state and
// workspace fit in what it has free, less a margin; otherwise the model does not fit that device
// and the backend refuses it (no partial offload). A pure function of the figures, so the planner
// and the tests can ask without a GPU.
#include <cstdint>
#include <string>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

enum class WeightPlacement { InPlace, Copied, DoesNotFit };

// Device memory for the forward's activations and scratch beyond the contexts' state: the
// placement's workspace figure (the largest user, a 256-token prefill chunk's MoE buffers on
// DS4 Flash, is well under it).
constexpr uint64_t kWorkspaceBytes = uint64_t(512) << 20;

struct PlacementInput {
  uint64_t weight_bytes = 0;     // the tensors the device forward reads
  uint64_t state_bytes = 0;      // device KV and compressor state of every live context
  uint64_t workspace_bytes = 0;  // activations, graphs and the context's own allocations
  uint64_t free_bytes = 0;       // what the device reports free (cuMemGetInfo)
};

struct Placement {
  WeightPlacement weights = WeightPlacement::DoesNotFit;
  uint64_t device_bytes = 0;  // what the backend allocates with cuMemAlloc
  uint64_t margin_bytes = 0;  // kept free on a discrete device
  std::string reason;         // one sentence for the log and the plan report
};

// The margin left free on a discrete device: 5% of its memory, at least 256 MiB.
uint64_t device_margin(const DeviceInfo& d);

// Never throws; `reason` names the figures behind the choice.
Placement choose_placement(const DeviceInfo& d, const PlacementInput& in);

// choose_placement for device 0 now: what it has free (Device::free_memory), kWorkspaceBytes of
// workspace. Throws std::runtime_error where no usable device exists.
Placement place_on_device(uint64_t weight_bytes, uint64_t state_bytes);

const char* placement_name(WeightPlacement p);  // "in place", "copied", "does not fit"

}  // namespace ds4::cuda
