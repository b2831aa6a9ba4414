// The backend decision. The device probe (device.cpp) never throws; the decision turns its
// answer into the refusal or the log line.
#include "engine/cuda/backend_choice.hpp"

#include <stdexcept>
#include <string>

#include "engine/cuda/device.hpp"

namespace ds4::cuda {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Automatic: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view s) {
  if (s == "auto") return Backend::Automatic;
  if (s == "cpu") return Backend::Cpu;
  if (s == "cuda") return Backend::Cuda;
  throw std::invalid_argument("backend '" + std::string(s) + "' is not one of auto, cpu, cuda");
}

const char* device_coverage() {
  return "on the device: matrix-vector kernels for every weight format (widths 1..8, Fast order, not yet run on a "
         "GPU); not yet: the forward pass (attention, compressors, indexer, MoE, prefill GEMM, KV on the device)";
}

BackendDecision choose_backend(Backend requested) {
  BackendDecision d;
  if (requested == Backend::Cpu) return d;
  const DeviceInfo info = probe();
  if (requested == Backend::Cuda) {
    if (!info.usable) throw std::runtime_error("--backend cuda: no usable CUDA device: " + info.why_not);
    throw std::runtime_error("--backend cuda: found " + info.name + " (compute capability " +
                             std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) +
                             "), but the CUDA backend cannot run the model yet -- " + device_coverage() +
                             "; use --backend cpu or auto");
  }
  if (!info.usable) d.log_line = "backend auto: CPU (no CUDA: " + info.why_not + ")";
  else
    d.log_line = "backend auto: CPU (" + info.name +
                 " found, but the forward pass is not on the device yet: " + device_coverage() + ")";
  return d;
}

}  // namespace ds4::cuda
