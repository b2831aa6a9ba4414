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

BackendDecision choose_backend(Backend requested) {
  BackendDecision d;
  if (requested == Backend::Cpu) return d;
  const DeviceInfo info = probe();
  if (!info.usable) {
    if (requested == Backend::Cuda) throw std::runtime_error("--backend cuda: no usable CUDA device: " + info.why_not);
    d.log_line = "backend auto: CPU (no CUDA: " + info.why_not + ")";
    return d;
  }
  d.use = Backend::Cuda;
  d.log_line = std::string("backend ") + backend_name(requested) + ": CUDA on " + info.name + " (compute capability " +
               std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) + ", " +
               std::to_string(info.sm_count) + " SMs" + (info.integrated ? ", unified memory)" : ")");
  return d;
}

}  // namespace ds4::cuda
