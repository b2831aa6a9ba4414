// See placement.hpp.
#include "engine/cuda/placement.hpp"

#include <cstdio>

namespace ds4::cuda {
namespace {

std::string gib(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(b) / (1ull << 30));
  return s;
}

}  // namespace

uint64_t device_margin(const DeviceInfo& d) {
  const uint64_t five_percent = d.total_memory / 20;
  return five_percent > (256ull << 20) ? five_percent : (256ull << 20);
}

Placement choose_placement(const DeviceInfo& d, const PlacementInput& in) {
  Placement p;
  const uint64_t own = in.state_bytes + in.workspace_bytes;
  if (d.integrated) {
    p.weights = WeightPlacement::InPlace;
    p.device_bytes = own;
    p.reason = d.name + " shares the host's memory: the GGUF mapping (" + gib(in.weight_bytes) +
               ") is registered and read in place, no copy; device state and workspace " + gib(own) +
               " come from the same memory the plan budgets";
    return p;
  }
  p.margin_bytes = device_margin(d);
  const uint64_t need = in.weight_bytes + own;
  if (need <= in.free_bytes && in.free_bytes - need >= p.margin_bytes) {
    p.weights = WeightPlacement::Copied;
    p.device_bytes = need;
    p.reason = "weights " + gib(in.weight_bytes) + " copied to " + d.name + " with state and workspace " + gib(own) +
               ": " + gib(need) + " of " + gib(in.free_bytes) + " free, " + gib(in.free_bytes - need) + " left";
    return p;
  }
  p.reason = "weights " + gib(in.weight_bytes) + " + state and workspace " + gib(own) + " = " + gib(need) +
             " do not fit the " + gib(in.free_bytes) + " free on " + d.name + " with a margin of " +
             gib(p.margin_bytes) +
             "; the CUDA backend does not split a model between devices: use --backend cpu, "
             "a smaller context or fewer live sessions";
  return p;
}

Placement place_on_device(uint64_t weight_bytes, uint64_t state_bytes) {
  PlacementInput in;
  in.weight_bytes = weight_bytes;
  in.state_bytes = state_bytes;
  in.workspace_bytes = kWorkspaceBytes;
  Device& device = Device::open();  // throws, naming what is missing, without a usable device
  in.free_bytes = device.free_memory();
  return choose_placement(device.info(), in);
}

const char* placement_name(WeightPlacement p) {
  switch (p) {
    case WeightPlacement::InPlace: return "in place";
    case WeightPlacement::Copied: return "copied";
    case WeightPlacement::DoesNotFit: return "does not fit";
  }
  return "?";
}

}  // namespace ds4::cuda
