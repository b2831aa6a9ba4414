#pragma once
// Which device runs the engine: --backend auto|cpu|cuda (config key engine.backend). `cuda` needs
// a usable GPU and is an error naming what is missing without one, never the CPU behind the
// user's back; `auto` takes the GPU when one is usable, else the CPU, with one log line saying
// which and why (docs/cuda.md §selection). Loading for the chosen device (the placement, the
// self-check) can still fail: engine/loaded_model's load_model_on applies the same rule there.
#include <string>
#include <string_view>

namespace ds4::cuda {

enum class Backend { Automatic, Cpu, Cuda };
const char* backend_name(Backend b);  // "auto", "cpu", "cuda"
// Throws std::invalid_argument naming the value for anything but auto, cpu, cuda.
Backend parse_backend(std::string_view s);

struct BackendDecision {
  Backend use = Backend::Cpu;  // what runs the forward: Cpu or Cuda
  std::string log_line;        // for auto and cuda: the one line saying what was chosen and why
};

// Throws std::runtime_error for `cuda` where no usable GPU exists, naming what is missing
// (driver, device, kernels in this binary).
BackendDecision choose_backend(Backend requested);

}  // namespace ds4::cuda
