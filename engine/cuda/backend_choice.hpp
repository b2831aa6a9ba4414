#pragma once
// Which device runs the engine: --backend auto|cpu|cuda (config key engine.backend). The CUDA
// backend has only its first kernels so far (matvec for every weight format), not the forward,
// so `cuda` is refused with a message saying so rather than running the CPU behind the user's
// back, and `auto` runs the CPU with one log line saying why (docs/cuda.md §selection).
#include <string>
#include <string_view>

namespace ds4::cuda {

enum class Backend { Automatic, Cpu, Cuda };
const char* backend_name(Backend b);  // "auto", "cpu", "cuda"
// Throws std::invalid_argument naming the value for anything but auto, cpu, cuda.
Backend parse_backend(std::string_view s);

struct BackendDecision {
  Backend use = Backend::Cpu;  // what runs the forward: cpu until the device forward exists
  std::string log_line;        // for auto: the one line saying what was chosen and why; else empty
};

// Throws std::runtime_error for `cuda`: naming what is missing (driver, device, kernels in this
// binary) where no usable GPU exists, else saying what the device implements and what not.
BackendDecision choose_backend(Backend requested);

// What the device side implements today, for messages and docs.
const char* device_coverage();

}  // namespace ds4::cuda
