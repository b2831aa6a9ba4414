#pragma once
// Keeping the weights resident (model.pin / --pin):
//   none  the page cache decides; under pressure weight pages are dropped and re-read from disk.
//   lock  the mapping is prefaulted (MAP_POPULATE, via the model's LoadOptions) and mlock()ed:
//         the pages become Unevictable and leave MemAvailable, so the memory watch and earlyoom
//         see the truth (docs/memory.md §memavailable-and-mapped-weights). Limited by RLIMIT_MEMLOCK (8 MiB under
//         systemd 252 by default): the unit needs LimitMEMLOCK=infinity, or the supervisor raises the limit for the
//         daemon while it is still root.
//   cuda  CUDA host registration of the whole mapping through the dlopen'd driver (no CUDA
//         runtime needed), so the GPU reads the weights in place (docs/cuda.md §placement).
// A failure throws PinError naming the limit or what is missing, and what to change.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "config/config.hpp"
#include "engine/cuda/host_registration.hpp"

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
  cuda::HostRegistration registration_;  // cuda mode
};

}  // namespace ds4::daemon
