#pragma once
// Keeping the weights resident (model.pin / --pin):
//   none  the page cache decides; under pressure weight pages are dropped and re-read from disk.
//   lock  the mapping is prefaulted (MAP_POPULATE, via the model's LoadOptions) and mlock()ed:
//         the pages become Unevictable and leave MemAvailable, so the memory watch and earlyoom
//         see the truth (docs/memory.md §memavailable-and-mapped-weights). Limited by RLIMIT_MEMLOCK (8 MiB under
//         systemd 252 by default): the unit needs LimitMEMLOCK=infinity, or the supervisor raises the limit for the
//         daemon while it is still root.
//   cuda  cudaHostRegister(Mapped|ReadOnly) of the whole mapping, so the GPU reads the weights
//         zero-copy. libcudart.so is loaded with dlopen at run time, so ds4d builds and runs
//         without CUDA installed; the driver pins without RLIMIT_MEMLOCK accounting.
// A failure throws PinError with a message that names the limit or the missing library and what
// to change.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "config/config.hpp"

namespace ds4::daemon {

class PinError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WeightPin {
 public:
  WeightPin() = default;
  // Pins [base, base+bytes) per mode (none: does nothing).
  static WeightPin pin(config::PinMode mode, const void* base, size_t bytes);
  ~WeightPin();
  WeightPin(WeightPin&& o) noexcept;
  WeightPin& operator=(WeightPin&& o) noexcept;
  WeightPin(const WeightPin&) = delete;
  WeightPin& operator=(const WeightPin&) = delete;

  config::PinMode mode() const { return mode_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  config::PinMode mode_ = config::PinMode::None;
  const void* base_ = nullptr;
  size_t bytes_ = 0;
  void* cudart_ = nullptr;  // dlopen handle (cuda mode)
};

}  // namespace ds4::daemon
