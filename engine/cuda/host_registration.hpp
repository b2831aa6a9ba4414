#pragma once
// Host memory the GPU reads in place: cuMemHostRegister (device-mapped, read-only where the device
// supports it) of a host range such as the GGUF mapping. On a unified-memory device (GB10) this is
// how the weights reach the GPU without a copy (docs/cuda.md §placement); `--pin cuda` keeps such
// a registration for the daemon's life. Only the CUDA driver is needed (engine/cuda/driver_api),
// not the CUDA runtime.
#include <cstddef>
#include <cstdint>

namespace ds4::cuda {

class HostRegistration {
 public:
  HostRegistration() = default;
  // Registers [base, base + bytes). Throws std::runtime_error naming what is missing (no usable
  // device: the probe's reason) or the driver's error and the size.
  HostRegistration(const void* base, size_t bytes);
  ~HostRegistration();
  HostRegistration(HostRegistration&& o) noexcept;
  HostRegistration& operator=(HostRegistration&& o) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  // The device address of host byte `p` of the range (the same value on devices that report
  // host_pointer_mapped). Throws std::out_of_range for a pointer outside it.
  uint64_t device_address(const void* p) const;
  const void* base() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  const void* base_ = nullptr;
  size_t bytes_ = 0;
  uint64_t device_base_ = 0;
};

}  // namespace ds4::cuda
